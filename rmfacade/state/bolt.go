package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltDurable keeps the durable tables in a bbolt file, one bucket a table:
// the embedded default's store. On Kubernetes the same tables are kept in
// the API server instead.
type BoltDurable struct{ db *bolt.DB }

// OpenBolt opens (creating) the store file under dir.
func OpenBolt(dir string) (*BoltDurable, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	path := filepath.Join(dir, "rm-state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("state: %s is locked: is another weft-rm using this data directory?", path)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for table := range durableTables {
			if _, err := tx.CreateBucketIfNotExists([]byte(table)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state: init %s: %w", path, err)
	}
	return &BoltDurable{db: db}, nil
}

// Load implements Durable.
func (b *BoltDurable) Load(fn func(table, key string, value []byte) error) error {
	return b.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error { return fn(string(name), string(k), v) })
		})
	})
}

// Commit implements Durable: one bbolt transaction, fsynced.
func (b *BoltDurable) Commit(ops []Op) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		for _, op := range ops {
			bk := tx.Bucket([]byte(op.Table))
			if bk == nil {
				return fmt.Errorf("no bucket %s", op.Table)
			}
			var err error
			if op.Value == nil {
				err = bk.Delete([]byte(op.Key))
			} else {
				err = bk.Put([]byte(op.Key), op.Value)
			}
			if err != nil {
				return fmt.Errorf("%s/%s: %w", op.Table, op.Key, err)
			}
		}
		return nil
	})
}

// Close implements Durable.
func (b *BoltDurable) Close() error { return b.db.Close() }

// OpenDir opens the embedded store kept under dir.
func OpenDir(dir string) (*Store, error) {
	durable, err := OpenBolt(dir)
	if err != nil {
		return nil, err
	}
	s, err := Open(durable)
	if err != nil {
		durable.Close()
		return nil, err
	}
	return s, nil
}
