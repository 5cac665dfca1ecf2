package localizer

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

type archiveType int

const (
	notArchive archiveType = iota
	jarArchive
	zipArchive
	tarArchive
	tgzArchive
)

// archiveKind tells an archive by its name, as FSDownload.unpack does:
// YARN never looks inside, so neither may we (a .jar of another format
// fails, and a tarball named .bin stays a file).
func archiveKind(name string) archiveType {
	lower := strings.ToLower(filepath.Base(name))
	switch {
	case strings.HasSuffix(lower, ".jar"):
		return jarArchive
	case strings.HasSuffix(lower, ".zip"):
		return zipArchive
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		return tgzArchive
	case strings.HasSuffix(lower, ".tar"):
		return tarArchive
	}
	return notArchive
}

// unpack expands the archive file into the new directory dst. Whatever an
// archive holds, nothing lands outside dst: entries naming absolute paths
// or "..", and links resolving outside, fail the unpacking.
func unpack(ctx context.Context, kind archiveType, archive, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	t := &tree{root: dst, dirs: map[string]bool{".": true}}
	var err error
	switch kind {
	case jarArchive, zipArchive:
		err = t.unzip(ctx, archive)
	case tarArchive, tgzArchive:
		err = t.untar(ctx, archive, kind == tgzArchive)
	default:
		err = fmt.Errorf("%s is not an archive", archive)
	}
	if err != nil {
		return err
	}
	return t.checkLinks()
}

// tree is a directory being filled from an archive.
type tree struct {
	root string
	// dirs are the directories (relative, cleaned) made so far: real
	// directories, not links, since a link cannot replace one.
	dirs map[string]bool
}

// mkdirs makes directory rel and its parents.
func (t *tree) mkdirs(rel string) error {
	if t.dirs[rel] {
		return nil
	}
	if err := mkdirBeneath(t.root, rel); err != nil {
		return err
	}
	t.dirs[rel] = true
	return nil
}

func (t *tree) path(rel string) string { return filepath.Join(t.root, filepath.FromSlash(rel)) }

func (t *tree) file(rel string, r io.Reader) error {
	if err := t.mkdirs(path.Dir(rel)); err != nil {
		return err
	}
	return writeFile(t.path(rel), r, 0o644)
}

func (t *tree) unzip(ctx context.Context, archive string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := beneath(f.Name)
		if err != nil {
			return fmt.Errorf("entry: %w", err)
		}
		if rel == "." {
			continue
		}
		if strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir() {
			if err := t.mkdirs(rel); err != nil {
				return err
			}
			continue
		}
		// Every other entry is a file, links included, as Hadoop's
		// unZip and RunJar.unJar write them.
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("entry %s: %w", f.Name, err)
		}
		err = t.file(rel, ctxReader{ctx, rc})
		rc.Close()
		if err != nil {
			return fmt.Errorf("entry %s: %w", f.Name, err)
		}
	}
	return nil
}

func (t *tree) untar(ctx context.Context, archive string, gz bool) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = ctxReader{ctx, f}
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		rel, err := beneath(h.Name)
		if err != nil {
			return fmt.Errorf("entry: %w", err)
		}
		if err := t.tarEntry(h, rel, tr); err != nil {
			return fmt.Errorf("entry %s: %w", h.Name, err)
		}
	}
}

func (t *tree) tarEntry(h *tar.Header, rel string, r io.Reader) error {
	switch h.Typeflag {
	case tar.TypeDir:
		return t.mkdirs(rel)
	case tar.TypeReg:
		return t.file(rel, r)
	case tar.TypeSymlink:
		// Checked here by name, and once all is unpacked by where it
		// leads (a chain of links can lead where no single one does).
		to := h.Linkname
		if to == "" || strings.HasPrefix(to, "/") {
			return fmt.Errorf("link to %q leads out of the archive", to)
		}
		if j := path.Join(path.Dir(rel), to); j == ".." || strings.HasPrefix(j, "../") {
			return fmt.Errorf("link to %q leads out of the archive", to)
		}
		if err := t.mkdirs(path.Dir(rel)); err != nil {
			return err
		}
		return os.Symlink(to, t.path(rel))
	case tar.TypeLink:
		to, err := beneath(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link: %w", err)
		}
		// The target must be a file this archive made in a real
		// directory, so the link cannot reach through a symbolic one.
		if !t.dirs[path.Dir(to)] {
			return fmt.Errorf("hard link to %q: no such file in the archive", h.Linkname)
		}
		if fi, err := os.Lstat(t.path(to)); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hard link to %q: no such file in the archive", h.Linkname)
		}
		if err := t.mkdirs(path.Dir(rel)); err != nil {
			return err
		}
		return os.Link(t.path(to), t.path(rel))
	}
	// Devices, fifos and the like have no place among a job's files;
	// Hadoop's unTar skips them too.
	return nil
}

// checkLinks refuses a tree with a symbolic link resolving outside it.
// Links that resolve to nothing lead nowhere and stay.
func (t *tree) checkLinks() error {
	root, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		to, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil
		}
		if to != root && !strings.HasPrefix(to, root+string(filepath.Separator)) {
			rel, _ := filepath.Rel(t.root, p)
			return fmt.Errorf("entry %s: link leads out of the archive", filepath.ToSlash(rel))
		}
		return nil
	})
}
