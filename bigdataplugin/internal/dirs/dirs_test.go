package dirs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriteFileAtomicConcurrent: writers of one file at once all succeed
// and the file holds one of their contents whole, with its mode; no
// temporary file is left. (With one fixed temporary name, a writer's
// rename found its file already renamed by another: "no such file".)
func TestWriteFileAtomicConcurrent(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, ".token")
	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, writers*20)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				errs <- WriteFileAtomic(name, []byte(fmt.Sprintf("content of writer %02d", w)), 0o600)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var w int
	if _, err := fmt.Sscanf(string(b), "content of writer %02d", &w); err != nil || len(b) != len("content of writer 00") {
		t.Fatalf("content %q", b)
	}
	st, _ := os.Stat(name)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
}
