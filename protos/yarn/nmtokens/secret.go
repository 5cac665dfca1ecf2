package nmtokens

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretKey is the data key of the master key in its Secret.
const SecretKey = "master-key"

// KeyFromSecret reads the master key from a Secret. With create, a missing
// Secret is made with a fresh key (the RM does this; the first writer
// wins, so replicas agree); without, it waits for the Secret until ctx
// ends (the node plugins do this).
func KeyFromSecret(ctx context.Context, client kubernetes.Interface, namespace, name string, create bool) ([]byte, error) {
	for {
		s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if k := s.Data[SecretKey]; len(k) >= 32 {
				return k, nil
			}
			return nil, fmt.Errorf("secret %s/%s: %q holds no key of 32 bytes or more", namespace, name, SecretKey)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		if create {
			key := make([]byte, 64)
			if _, err := rand.Read(key); err != nil {
				return nil, err
			}
			_, err := client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
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
