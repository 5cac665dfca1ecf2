// Package masterkey keeps the master keys Weft's tokens are signed with —
// RM delegation tokens, AMRMTokens, container tokens and NMTokens — where
// every process that signs or checks them can read the same bytes: a
// Kubernetes Secret, or a file in the embedded mode. Hadoop's RM keeps its
// master keys in its state store for the same reason: tokens signed before
// a restart or a failover stay valid after it. The RM and the node plugin
// both read the NM master key, so the package belongs to neither of them.
package masterkey

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretKey is the data key of the master key in its Secret.
const SecretKey = "master-key"

// minLen is the shortest key accepted from a Secret or a file; newKey
// makes keys of keyLen.
const (
	minLen = 32
	keyLen = 64
)

func newKey() ([]byte, error) {
	key := make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return key, nil
}

// FromSecret reads the master key from a Secret. With create, a missing
// Secret is made with a fresh key (the RM does this; the first writer
// wins, so replicas agree); without, it waits for the Secret until ctx
// ends (the node plugins do this).
func FromSecret(ctx context.Context, client kubernetes.Interface, namespace, name string, create bool) ([]byte, error) {
	for {
		s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if k := s.Data[SecretKey]; len(k) >= minLen {
				return k, nil
			}
			return nil, fmt.Errorf("secret %s/%s: %q holds no key of %d bytes or more", namespace, name, SecretKey, minLen)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		if create {
			key, err := newKey()
			if err != nil {
				return nil, err
			}
			_, err = client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "weft"}},
				Data:       map[string][]byte{SecretKey: key},
			}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("create secret %s/%s: %w", namespace, name, err)
			}
			continue // read back whichever key won
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// FromFile reads the key kept in dir under name, creating it on first
// start (a file shorter than a key is replaced). The key is written to a
// temporary file and renamed, so a reader never sees half a key.
func FromFile(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil && len(b) >= minLen {
		return b, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("master key %s: %w", name, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("write key %s: %w", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("master key %s: %w", name, err)
	}
	return key, nil
}
