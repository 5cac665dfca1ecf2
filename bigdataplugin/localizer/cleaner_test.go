package localizer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

// makeEntry makes a cache entry at rel beneath cache, holding size bytes
// (in a file and an unpacked archive's subdirectory, with a link that
// must not be counted), last used at used, with its lock file beside it.
func makeEntry(t *testing.T, cache, rel string, size int, used time.Time) string {
	t.Helper()
	p := filepath.Join(cache, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Join(p, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	half := size / 2
	if err := os.WriteFile(filepath.Join(p, "data"), make([]byte, half), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "lib", "more"), make([]byte, size-half), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(p, "lib", "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	setUsed(t, p, used)
	return p
}

func setUsed(t *testing.T, p string, used time.Time) {
	t.Helper()
	if err := os.Chtimes(p, used, used); err != nil {
		t.Fatal(err)
	}
}

// remaining lists the entries left, by name.
func remaining(t *testing.T, paths map[string]string) []string {
	t.Helper()
	var left []string
	for name, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	sort.Strings(left)
	return left
}

func TestClean(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	// Four entries of 100 bytes, one per scope and a recent one, from
	// the least recently used.
	entries := []struct {
		name, rel string
		age       time.Duration
	}{
		{"a", "public/a", 5 * time.Hour},
		{"b", "private/alice/b", 4 * time.Hour},
		{"c", "app/application_1_0001/c", 3 * time.Hour},
		{"d", "public/d", time.Minute},
	}
	tests := []struct {
		name      string
		target    int64
		inUse     []string
		locked    []string // lock held by another
		usedNow   []string // used by a localizer once listed
		inUseErr  error
		wantLeft  []string
		wantStats CleanStats
		wantErr   string
	}{{
		name:      "under the target",
		target:    400,
		wantLeft:  []string{"a", "b", "c", "d"},
		wantStats: CleanStats{Entries: 4, Size: 400},
	}, {
		name:      "least recently used first, until under the target",
		target:    250,
		wantLeft:  []string{"c", "d"},
		wantStats: CleanStats{Entries: 4, Removed: 2, Size: 400, Freed: 200},
	}, {
		name:      "entries in use kept",
		target:    250,
		inUse:     []string{"a"},
		wantLeft:  []string{"a", "d"},
		wantStats: CleanStats{Entries: 4, Removed: 2, Size: 400, Freed: 200},
	}, {
		name:      "entries used within MinAge kept, though over the target",
		target:    0,
		wantLeft:  []string{"d"},
		wantStats: CleanStats{Entries: 4, Removed: 3, Size: 400, Freed: 300},
	}, {
		name:      "entry whose lock is held skipped",
		target:    250,
		locked:    []string{"b"},
		wantLeft:  []string{"b", "d"},
		wantStats: CleanStats{Entries: 4, Removed: 2, Size: 400, Freed: 200},
	}, {
		name:      "entry used since it was listed kept",
		target:    150,
		usedNow:   []string{"a"},
		wantLeft:  []string{"a", "d"},
		wantStats: CleanStats{Entries: 4, Removed: 2, Size: 400, Freed: 200},
	}, {
		name:      "nothing removed when what is in use is unknown",
		target:    0,
		inUseErr:  errors.New("permission denied"),
		wantLeft:  []string{"a", "b", "c", "d"},
		wantStats: CleanStats{Entries: 4, Size: 400},
		wantErr:   "clean cache: entries in use: permission denied",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			paths := map[string]string{}
			for _, e := range entries {
				paths[e.name] = makeEntry(t, cache, e.rel, 100, now.Add(-e.age))
			}
			for _, name := range tc.locked {
				unlock, err := lockFile(context.Background(), paths[name]+".lock", syscall.LOCK_EX)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			c := &CacheCleaner{
				Dir: cache, TargetSize: tc.target, MinAge: 10 * time.Minute,
				Now: func() time.Time { return now },
				InUse: func(context.Context) (map[string]bool, error) {
					for _, name := range tc.usedNow {
						setUsed(t, paths[name], now)
					}
					inUse := map[string]bool{}
					for _, name := range tc.inUse {
						inUse[paths[name]] = true
					}
					return inUse, tc.inUseErr
				},
			}
			stats, err := c.Clean(context.Background())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("Clean: %v, want error %q", err, tc.wantErr)
			}
			if stats != tc.wantStats {
				t.Errorf("stats %+v, want %+v", stats, tc.wantStats)
			}
			if got := remaining(t, paths); fmt.Sprint(got) != fmt.Sprint(tc.wantLeft) {
				t.Errorf("entries left %v, want %v", got, tc.wantLeft)
			}
			noLeftovers(t, cache)
		})
	}
}

func TestCleanLeftovers(t *testing.T) {
	now := time.Now()
	cache := t.TempDir()
	old, recent := now.Add(-2*time.Hour), now.Add(-30*time.Minute)
	mk := func(rel string, dir bool, modified time.Time) string {
		p := filepath.Join(cache, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if dir {
			if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			setUsed(t, filepath.Join(p, "x"), modified)
		} else if err := os.WriteFile(p, []byte("leftover"), 0o644); err != nil {
			t.Fatal(err)
		}
		setUsed(t, p, modified)
		return p
	}
	tests := []struct {
		rel    string
		dir    bool
		mtime  time.Time
		remove bool
	}{
		{".trash-1", true, now, true},
		{".fetch-old", true, old, true},
		{".fetch-recent", true, recent, false},
		{".download-old", false, old, true},
		{".download-recent", false, recent, false},
		{"public/.fetch-old", true, old, true},
		{"app/application_1_0001/.trash-2", true, recent, true},
		{"public/a.lock", false, old, false},
		{"public/stray-file", false, old, false},
	}
	paths := map[string]bool{}
	for _, tc := range tests {
		paths[mk(tc.rel, tc.dir, tc.mtime)] = tc.remove
	}
	// A fetch begun long ago but writing still is no leftover.
	live := mk(".fetch-live", true, old)
	setUsed(t, filepath.Join(live, "x"), now)
	paths[live] = false
	entry := makeEntry(t, cache, "public/a", 10, old)
	c := &CacheCleaner{Dir: cache, TargetSize: 1 << 20}
	stats, err := c.Clean(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (CleanStats{Entries: 1, Size: 10}); stats != want {
		t.Errorf("stats %+v, want %+v (the entry alone)", stats, want)
	}
	for p, remove := range paths {
		_, err := os.Lstat(p)
		if gone := errors.Is(err, fs.ErrNotExist); gone != remove {
			t.Errorf("%s: removed %v, want %v", p, gone, remove)
		}
	}
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("entry: %v", err)
	}
}

// TestCleanLocalized has a cleaner and the localizer share a cache: what
// a live container linked (as its references file records) stays, the
// rest goes, and goes cleanly enough to be fetched again.
func TestCleanLocalized(t *testing.T) {
	dir := t.TempDir()
	cache, refs := filepath.Join(dir, "cache"), filepath.Join(dir, "refs")
	var rs []*yarnpb.StringLocalResourceMapProto
	for _, name := range []string{"kept.txt", "gone.txt"} {
		p := filepath.Join(dir, "src", name)
		rs = append(rs, resource(name, fileURL(p), writeSource(t, p, []byte(name)), yarnpb.LocalResourceTypeProto_FILE))
	}
	localize := func(container string, rs []*yarnpb.StringLocalResourceMapProto) string {
		t.Helper()
		work := filepath.Join(dir, "containers", container)
		if err := Localize(context.Background(), Options{CacheDir: cache, RefsFile: filepath.Join(refs, container)}, rs, work); err != nil {
			t.Fatal(err)
		}
		return work
	}
	// A finished container linked both; a live one links only kept.txt.
	work := localize("container_1_0001_01_000002", rs)
	kept, gone := linkedEntry(t, work, "kept.txt"), linkedEntry(t, work, "gone.txt")
	localize("container_1_0001_01_000003", rs[:1])
	if err := os.Remove(filepath.Join(refs, "container_1_0001_01_000002")); err != nil {
		t.Fatal(err)
	}
	c := &CacheCleaner{Dir: cache, MinAge: time.Minute,
		Now: func() time.Time { return time.Now().Add(time.Hour) },
		InUse: func(context.Context) (map[string]bool, error) {
			return RefsInUse(cache, filepath.Join(refs, "*"))
		},
	}
	stats, err := c.Clean(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stats.Entries != 2 || stats.Removed != 1 || stats.Freed != int64(len("gone.txt")) {
		t.Errorf("stats %+v, want 1 of 2 entries removed, freeing %d bytes", stats, len("gone.txt"))
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("linked entry: %v", err)
	}
	if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unlinked entry: %v, want it removed", err)
	}
	noLeftovers(t, cache)
	work = localize("container_1_0001_01_000004", rs[1:])
	wantFile(t, filepath.Join(work, "gone.txt"), "gone.txt", true)
}

func TestRefsInUse(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	refs := func(app, container string) string {
		return filepath.Join(root, "local", "usercache", "alice", "appcache", app, ".weft-cache-refs", container)
	}
	if err := WriteRefs(refs("application_1_0001", "container_1_0001_01_000001"), []string{"public/aa", "app/application_1_0001/bb"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteRefs(refs("application_1_0002", "container_1_0002_01_000002"), []string{"private/alice/cc", "../escapes"}); err != nil {
		t.Fatal(err)
	}
	got, err := RefsInUse(cache, filepath.Join(root, "local", "usercache", "*", "appcache", "*", ".weft-cache-refs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		filepath.Join(cache, "public/aa"): true, filepath.Join(cache, "app/application_1_0001/bb"): true,
		filepath.Join(cache, "private/alice/cc"): true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RefsInUse = %v, want %v", got, want)
	}
}
