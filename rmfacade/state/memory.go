package state

import "sync"

// MemoryDurable keeps the durable tables in memory: nothing survives the
// process. For fuzzing and benchmarks of the code above the store, where
// fsyncs would measure the disk.
type MemoryDurable struct {
	mu     sync.Mutex
	tables map[string]map[string][]byte
}

// OpenMemory returns a store over an empty MemoryDurable.
func OpenMemory() (*Store, error) {
	return Open(&MemoryDurable{tables: map[string]map[string][]byte{}})
}

// Load implements Durable.
func (m *MemoryDurable) Load(fn func(table, key string, value []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for table, rows := range m.tables {
		for key, value := range rows {
			if err := fn(table, key, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit implements Durable.
func (m *MemoryDurable) Commit(ops []Op) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range ops {
		rows := m.tables[op.Table]
		if rows == nil {
			rows = map[string][]byte{}
			m.tables[op.Table] = rows
		}
		if op.Value == nil {
			delete(rows, op.Key)
		} else {
			rows[op.Key] = op.Value
		}
	}
	return nil
}

// Close implements Durable.
func (m *MemoryDurable) Close() error { return nil }
