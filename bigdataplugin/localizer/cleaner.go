package localizer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/internal/dirs"
)

// CacheCleaner keeps a node's cache under a target size, as the
// NodeManager's ResourceLocalizationService does
// (yarn.nodemanager.localizer.cache.target-size-mb, default 10240),
// deleting least recently used entries that no live container links.
type CacheCleaner struct {
	Dir        string        // the cache directory (Options.CacheDir)
	TargetSize int64         // bytes
	MinAge     time.Duration // an entry used more recently than this is kept (a container may be linking it)
	// InUse returns the cache entry directories (absolute paths, as under
	// Dir) that live containers link; RefsInUse reads them from what
	// Localize recorded (Options.RefsFile). Nil means none are, so that
	// only MinAge protects entries.
	InUse func(ctx context.Context) (map[string]bool, error)
	Now   func() time.Time // nil means time.Now
}

// CleanStats tells what a Clean found and did.
type CleanStats struct {
	Entries, Removed int   // entries found, and removed of them
	Size, Freed      int64 // bytes the entries found held, and the removed ones
}

// leftoverAge is how long the temporary files of a fetch may go unchanged
// before Clean takes them for those of a localizer that died.
const leftoverAge = time.Hour

// cacheEntry is an entry as Clean found it.
type cacheEntry struct {
	path  string
	size  int64
	mtime time.Time // its last use
}

// Clean deletes entries, least recently used first, until the cache holds
// no more than TargetSize bytes, or no entry is left that it may delete:
// those InUse names, those used within MinAge and those whose lock is
// held are kept. On its way it removes what crashed localizers and
// cleaners left. It goes on past an entry it fails to delete and returns
// the errors together at the end.
func (c *CacheCleaner) Clean(ctx context.Context) (CleanStats, error) {
	var stats CleanStats
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	// The cutoff is fixed before InUse lists the links: an entry linked
	// after the listing began was marked used after it began too (see
	// useEntry), so it is kept whether or not the listing saw the link.
	start := now()
	cutoff := start.Add(-c.MinAge)
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return stats, fmt.Errorf("clean cache: %w", err)
	}
	entries, errs := scanCache(ctx, dir, start)
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("clean cache: %w", err)
	}
	stats.Entries = len(entries)
	for _, e := range entries {
		stats.Size += e.size
	}
	if stats.Size <= c.TargetSize {
		return stats, errors.Join(errs...)
	}
	var inUse map[string]bool
	if c.InUse != nil {
		if inUse, err = c.InUse(ctx); err != nil {
			// Without knowing what is linked, nothing is safe to delete.
			return stats, fmt.Errorf("clean cache: entries in use: %w", err)
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].mtime.Equal(entries[j].mtime) {
			return entries[i].mtime.Before(entries[j].mtime)
		}
		return entries[i].path < entries[j].path
	})
	size := stats.Size
	for _, e := range entries {
		if size <= c.TargetSize {
			break
		}
		if err := ctx.Err(); err != nil {
			return stats, fmt.Errorf("clean cache: %w", err)
		}
		if inUse[e.path] || !e.mtime.Before(cutoff) {
			continue
		}
		removed, err := removeEntry(dir, e.path, cutoff)
		if removed {
			stats.Removed++
			stats.Freed += e.size
			size -= e.size
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return stats, errors.Join(errs...)
}

// scanCache lists the entries of every scope of the cache in dir, and
// removes the leftovers it passes. Errors that cost it an entry or a
// leftover are returned beside what it found.
func scanCache(ctx context.Context, dir string, now time.Time) ([]cacheEntry, []error) {
	var errs []error
	parents := []string{filepath.Join(dir, publicScope)}
	for _, scope := range []string{privateScope, appScope} {
		des, err := os.ReadDir(filepath.Join(dir, scope))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("clean cache: %w", err))
		}
		for _, d := range des {
			if d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
				parents = append(parents, filepath.Join(dir, scope, d.Name()))
			}
		}
	}
	// The temporary files of fetches and deletions are made in dir
	// itself; those of other designs may be beside the entries.
	if err := removeLeftovers(dir, now); err != nil {
		errs = append(errs, err)
	}
	var entries []cacheEntry
	for _, parent := range parents {
		if ctx.Err() != nil {
			return entries, errs
		}
		if err := removeLeftovers(parent, now); err != nil {
			errs = append(errs, err)
		}
		des, err := os.ReadDir(parent)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("clean cache: %w", err))
			}
			continue
		}
		for _, d := range des {
			if !d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(d.Name(), ".lock") {
				continue
			}
			p := filepath.Join(parent, d.Name())
			e, err := scanEntry(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while we looked: by RemoveApp, or another cleaner
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("clean cache: %w", err))
				continue
			}
			entries = append(entries, e)
		}
	}
	return entries, errs
}

// scanEntry measures an entry: the sizes of its regular files, without
// following links (they lead within the entry, or outside the cache).
func scanEntry(p string) (cacheEntry, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return cacheEntry{}, err
	}
	e := cacheEntry{path: p, mtime: fi.ModTime()}
	err = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e.size += info.Size()
		return nil
	})
	return e, err
}

// removeLeftovers removes, among the files of dir, the trash of deletions
// that did not finish, and fetches that have not changed for leftoverAge
// (a live fetch writes its files, or makes new ones, all along).
func removeLeftovers(dir string, now time.Time) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("clean cache: %w", err)
	}
	var errs []error
	for _, d := range des {
		p := filepath.Join(dir, d.Name())
		switch name := d.Name(); {
		case strings.HasPrefix(name, ".trash-"):
		case strings.HasPrefix(name, ".fetch-"), strings.HasPrefix(name, ".download-"):
			last, err := dirs.LastChange(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // done with, by its localizer
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("clean cache: %w", err))
				continue
			}
			if now.Sub(last) < leftoverAge {
				continue
			}
		default:
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("clean cache: %w", err))
		}
	}
	return errors.Join(errs...)
}

// removeEntry deletes the entry at p unless a localizer holds its lock or
// has used it since cutoff: under the entry's exclusive lock, taken
// without waiting, it renames the entry aside, so that no localizer finds
// it half deleted, and then deletes it unlocked. removed tells whether
// the entry left the cache.
func removeEntry(dir, p string, cutoff time.Time) (removed bool, err error) {
	unlock, ok, err := tryLockFile(p+".lock", syscall.LOCK_EX)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // its scope is gone: RemoveApp
	}
	if err != nil {
		return false, fmt.Errorf("clean cache: %w", err)
	}
	if !ok {
		return false, nil // being linked, or fetched again
	}
	trash, err := func() (string, error) {
		defer unlock()
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if !fi.ModTime().Before(cutoff) {
			return "", nil // used since we listed it
		}
		trash, err := trashName(dir)
		if err != nil {
			return "", err
		}
		if err := os.Rename(p, trash); err != nil {
			return "", err
		}
		return trash, nil
	}()
	if err != nil {
		return false, fmt.Errorf("clean cache: remove %s: %w", p, err)
	}
	if trash == "" {
		return false, nil
	}
	if err := os.RemoveAll(trash); err != nil {
		// The entry has left the cache; its trash goes next time.
		return true, fmt.Errorf("clean cache: remove %s: %w", p, err)
	}
	return true, nil
}

// trashName is a new name in dir to rename what is being deleted to.
func trashName(dir string) (string, error) {
	suffix, err := randomSuffix()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, ".trash-"+suffix), nil
}
