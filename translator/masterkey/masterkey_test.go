package masterkey

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestFromFile(t *testing.T) {
	key32 := bytes.Repeat([]byte{7}, 32)
	cases := []struct {
		name     string
		existing []byte // nil: no file
		keep     bool   // the existing key is returned as is
	}{
		{name: "missing: a fresh key is written"},
		{name: "shorter than a key: replaced", existing: []byte("short")},
		{name: "a key: kept", existing: key32, keep: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if c.existing != nil {
				if err := os.MkdirAll(dir, 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "nm.key"), c.existing, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			key, err := FromFile(dir, "nm.key")
			if err != nil {
				t.Fatal(err)
			}
			if c.keep != bytes.Equal(key, c.existing) {
				t.Fatalf("key %x, existing %x: keep = %v", key, c.existing, c.keep)
			}
			if !c.keep && len(key) != keyLen {
				t.Fatalf("fresh key of %d bytes, want %d", len(key), keyLen)
			}
			st, err := os.Stat(filepath.Join(dir, "nm.key"))
			if err != nil {
				t.Fatal(err)
			}
			if !c.keep && st.Mode().Perm() != 0o600 {
				t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
			}
			again, err := FromFile(dir, "nm.key")
			if err != nil || !bytes.Equal(again, key) {
				t.Fatalf("second read %x, %v; want the same key %x", again, err, key)
			}
		})
	}
}

func secret(name string, key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "weft"}, Data: map[string][]byte{SecretKey: key}}
}

func TestFromSecret(t *testing.T) {
	key32 := bytes.Repeat([]byte{3}, 32)
	winner := bytes.Repeat([]byte{9}, 64)
	cases := []struct {
		name     string
		existing *corev1.Secret
		create   bool
		// race makes another replica create the Secret between this
		// one's Get and Create.
		race    bool
		want    []byte // nil: a fresh key of keyLen
		wantErr string
	}{
		{name: "existing key read", existing: secret("nm", key32), want: key32},
		{name: "existing key read, create or not", existing: secret("nm", key32), create: true, want: key32},
		{name: "missing, created", create: true},
		{name: "missing, another replica wins the create", create: true, race: true, want: winner},
		{name: "too short a key refused", existing: secret("nm", []byte("short")), create: true, wantErr: "holds no key of 32 bytes"},
		{name: "missing, not ours to create: waits until ctx ends", wantErr: context.DeadlineExceeded.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var objs []runtime.Object
			if c.existing != nil {
				objs = append(objs, c.existing)
			}
			client := fake.NewClientset(objs...)
			if c.race {
				client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					if err := client.Tracker().Add(secret("nm", winner)); err != nil {
						t.Fatal(err)
					}
					return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "nm")
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			key, err := FromSecret(ctx, client, "weft", "nm", c.create)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, c.wantErr)
				}
				if c.wantErr == context.DeadlineExceeded.Error() && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err %v does not wrap ctx's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil && !bytes.Equal(key, c.want) {
				t.Fatalf("key %x, want %x", key, c.want)
			}
			if c.want == nil && len(key) != keyLen {
				t.Fatalf("fresh key of %d bytes, want %d", len(key), keyLen)
			}
			stored, err := client.CoreV1().Secrets("weft").Get(ctx, "nm", metav1.GetOptions{})
			if err != nil || !bytes.Equal(stored.Data[SecretKey], key) {
				t.Fatalf("the Secret holds %x (%v), the caller got %x: replicas would disagree", stored.Data[SecretKey], err, key)
			}
		})
	}
}
