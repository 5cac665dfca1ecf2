package state

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
)

// LoadOrCreateKey reads the secret key kept in dir under name, creating it
// on first start, so that tokens signed with it stay valid across restarts.
func LoadOrCreateKey(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	}
	key := make([]byte, 64)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("write key %s: %w", name, err)
	}
	return key, os.Rename(tmp, path)
}
