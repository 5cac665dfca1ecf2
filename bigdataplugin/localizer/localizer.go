// Package localizer does for a container pod what a YARN NodeManager's
// localizer does for a container: it fetches the container's
// LocalResources (jars, files and archives on HDFS or the node's
// filesystem) into a node-wide cache and links each into the container's
// working directory under its key.
//
// Unmodified YARN applications depend on the details of this, so they
// follow Hadoop's FSDownload: a source whose modification time is not the
// one the application recorded fails the container (the job would run
// with a file changed under it), archives are unpacked by file name, a
// PATTERN jar is unpacked next to a copy of itself (MapReduce's class path
// names both job.jar/job.jar and job.jar/classes/), and localized files
// are executable. The cache is shared by every container on the node, so a
// resource is fetched once per (URL, timestamp, type), and concurrent
// localizers of one node coordinate through the cache directory alone.
package localizer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

// FileSystem is the little a localizer needs of a source filesystem. Paths
// are absolute, slash-separated, as in a URLProto's File.
type FileSystem interface {
	// Stat describes a file or directory. ModTime must carry the
	// filesystem's millisecond modification time: it is compared with
	// the resource's timestamp.
	Stat(path string) (fs.FileInfo, error)
	// ReadDir describes a directory's entries; Name is the base name.
	ReadDir(path string) ([]fs.FileInfo, error)
	Open(path string) (io.ReadCloser, error)
}

// Options configures Localize.
type Options struct {
	// CacheDir is the node-wide cache. Each resource lives in
	// <CacheDir>/<hash of URL, timestamp and type>/<source base name>, so a
	// source changed since (with a new timestamp) is a different entry.
	CacheDir string
	// User is who reads HDFS, with SIMPLE authentication; empty means the
	// user this process runs as.
	User string
	// HDFS opens the filesystem of a namenode (host:port). The default
	// uses github.com/colinmarc/hdfs/v2. A FileSystem that is also an
	// io.Closer is closed when Localize returns.
	HDFS func(ctx context.Context, namenode, user string) (FileSystem, error)
}

// defaultHDFSPort is the namenode's RPC port when a URL names none, as
// fs.defaultFS conventionally does.
const defaultHDFSPort = 8020

// Localize fetches resources into opts.CacheDir, unless already cached,
// and links each into workDir under its key (which may name
// subdirectories), replacing a link already there. It stops at the first
// resource that fails, with an error naming it.
func Localize(ctx context.Context, opts Options, resources []*yarnpb.StringLocalResourceMapProto, workDir string) (err error) {
	if opts.CacheDir == "" {
		return errors.New("localize: no cache directory")
	}
	// Links must hold absolute paths: they are followed from the
	// container's working directory, not from ours.
	cacheDir, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return fmt.Errorf("localize: cache directory: %w", err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return fmt.Errorf("localize: cache directory: %w", err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return fmt.Errorf("localize: working directory: %w", err)
	}
	if opts.HDFS == nil {
		opts.HDFS = dialHDFS
	}
	// A container often has many resources on one namenode; one client
	// serves them all.
	hdfsClients := map[string]FileSystem{}
	defer func() {
		for nn, fsys := range hdfsClients {
			if c, ok := fsys.(io.Closer); ok {
				if cerr := c.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("localize: close hdfs %s: %w", nn, cerr)
				}
			}
		}
	}()
	for _, kv := range resources {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("localize: %w", err)
		}
		if err := localizeOne(ctx, opts, cacheDir, hdfsClients, kv.GetKey(), kv.GetValue(), workDir); err != nil {
			return err
		}
	}
	return nil
}

// source is where a resource comes from.
type source struct {
	url string // as Hadoop prints it, for messages
	// id names the source in the cache key: url, with the port we
	// actually used, so hdfs://nn/x and hdfs://nn:8020/x share an entry.
	id   string
	fsys FileSystem
	path string
}

func localizeOne(ctx context.Context, opts Options, cacheDir string, hdfsClients map[string]FileSystem, key string, r *yarnpb.LocalResourceProto, workDir string) error {
	u := r.GetResource()
	url := URLString(u)
	fail := func(err error) error { return fmt.Errorf("localize %q from %s: %w", key, url, err) }
	if u == nil {
		return fail(errors.New("resource has no URL"))
	}
	rel, err := cleanRelative(key)
	if err != nil {
		return fail(fmt.Errorf("invalid resource name: %w", err))
	}
	if !strings.HasPrefix(u.GetFile(), "/") {
		return fail(fmt.Errorf("path %q is not absolute", u.GetFile()))
	}
	src := source{url: url, id: url, path: u.GetFile()}
	switch u.GetScheme() {
	case "file":
		src.fsys = localFS{}
	case "hdfs":
		if u.GetHost() == "" {
			return fail(errors.New("hdfs URL names no namenode"))
		}
		port := int(u.GetPort())
		if port <= 0 {
			port = defaultHDFSPort
		}
		nn := fmt.Sprintf("%s:%d", u.GetHost(), port)
		src.id = "hdfs://" + nn + u.GetFile()
		fsys, ok := hdfsClients[nn]
		if !ok {
			if fsys, err = opts.HDFS(ctx, nn, opts.User); err != nil {
				return fail(fmt.Errorf("connect to namenode %s: %w", nn, err))
			}
			hdfsClients[nn] = fsys
		}
		src.fsys = fsys
	default:
		return fail(fmt.Errorf("unsupported filesystem scheme %q (want hdfs or file)", u.GetScheme()))
	}
	cached, err := cache(ctx, cacheDir, src, r)
	if err != nil {
		return fail(err)
	}
	if err := link(workDir, rel, cached); err != nil {
		return fail(err)
	}
	return nil
}

// URLString renders a URLProto as Hadoop prints the Path made from it
// (scheme://userinfo@host:port/file, or scheme:/file without a host), so
// that messages read as YARN's do.
func URLString(u *yarnpb.URLProto) string {
	var b strings.Builder
	if u.GetScheme() != "" {
		b.WriteString(u.GetScheme() + ":")
	}
	if u.GetHost() != "" {
		b.WriteString("//")
		if u.GetUserInfo() != "" {
			b.WriteString(u.GetUserInfo() + "@")
		}
		b.WriteString(u.GetHost())
		if u.GetPort() > 0 {
			b.WriteString(":" + strconv.Itoa(int(u.GetPort())))
		}
	}
	b.WriteString(u.GetFile())
	return b.String()
}

// cache returns the cached copy of a resource, fetching it first if the
// cache lacks it. Entries appear only by renaming a complete download into
// place, so an entry that exists is whole; a lock per entry keeps the
// localizers of concurrent containers from fetching one resource twice.
func cache(ctx context.Context, cacheDir string, src source, r *yarnpb.LocalResourceProto) (string, error) {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", src.id, r.GetTimestamp(), r.GetType())))
	entry := filepath.Join(cacheDir, hex.EncodeToString(sum[:16]))
	target := filepath.Join(entry, baseName(src.path))
	if _, err := os.Lstat(entry); err == nil {
		return target, nil
	}
	unlock, err := lockFile(ctx, entry+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Lstat(entry); err == nil {
		return target, nil // fetched by another localizer while we waited
	}
	tmp, err := os.MkdirTemp(cacheDir, ".fetch-")
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := download(ctx, cacheDir, src, r, filepath.Join(tmp, baseName(src.path))); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp, entry); err != nil {
		// Someone not holding our lock (a localizer of another design,
		// or a lock on a filesystem without flock) may have won; theirs
		// is as good as ours.
		if _, serr := os.Lstat(entry); serr == nil {
			return target, nil
		}
		return "", fmt.Errorf("cache: %w", err)
	}
	return target, nil
}

// baseName is the name a resource has in its cache entry: its source's,
// as FSDownload names it, since the unpacking depends on it.
func baseName(p string) string {
	b := path.Base(p)
	if b == "/" || b == "." || b == ".." {
		return "resource"
	}
	return b
}

// lockFile takes an exclusive flock on name, polling so that ctx can end
// the wait. The lock file stays: removing it would let a later localizer
// lock a different inode than one still waiting.
func lockFile(ctx context.Context, name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// Closing the file releases the lock.
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// download verifies a resource and fetches it to dst, unpacking it as its
// type and name say, as FSDownload.verifyAndCopy and unpack do.
func download(ctx context.Context, cacheDir string, src source, r *yarnpb.LocalResourceProto, dst string) error {
	fi, err := src.fsys.Stat(src.path)
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	// FSDownload compares the timestamp, always (0 included), and not the
	// size.
	if mtime := fi.ModTime().UnixMilli(); mtime != r.GetTimestamp() {
		return fmt.Errorf("Resource %s changed on src filesystem (expected %d, was %d)", src.url, r.GetTimestamp(), mtime)
	}
	if fi.IsDir() {
		// A directory is copied whatever its type, as FSDownload does.
		if err := copyTree(ctx, src.fsys, src.path, dst); err != nil {
			return err
		}
		return makeExecutable(dst)
	}
	kind := archiveKind(dst)
	if t := r.GetType(); kind == notArchive || (t != yarnpb.LocalResourceTypeProto_ARCHIVE && t != yarnpb.LocalResourceTypeProto_PATTERN) {
		if err := copyFile(ctx, src.fsys, src.path, dst); err != nil {
			return err
		}
		return makeExecutable(dst)
	}
	// Zip needs random access, so archives are fetched whole first.
	f, err := os.CreateTemp(cacheDir, ".download-")
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	archive := f.Name()
	f.Close()
	defer os.Remove(archive)
	if err := copyFile(ctx, src.fsys, src.path, archive); err != nil {
		return err
	}
	if err := unpack(ctx, kind, archive, dst); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if r.GetType() == yarnpb.LocalResourceTypeProto_PATTERN && kind == jarArchive {
		// FSDownload (RunJar.unJarAndSave) keeps the jar itself in the
		// directory too: MapReduce puts job.jar/job.jar on the class path.
		// It unpacks only entries matching the resource's pattern (a Java
		// regular expression); we unpack all of them, a superset that
		// spares translating Java's regular expressions.
		if err := os.Rename(archive, filepath.Join(dst, baseName(src.path))); err != nil {
			return fmt.Errorf("unpack: keep jar: %w", err)
		}
	}
	return makeExecutable(dst)
}

// makeExecutable gives localized files the permissions FSDownload gives
// public resources: directories 0755, files 0555. Applications run
// localized scripts directly and rely on this. Private resources get these
// too (YARN makes them 0700/0500), because the container may run as
// another user than the localizer; the cache is mounted read-only into
// containers, and the mount, not file modes, is what keeps them apart.
func makeExecutable(root string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Chmod(p, 0o755)
		case d.Type().IsRegular():
			return os.Chmod(p, 0o555)
		}
		return nil // links keep theirs; FSDownload does not follow them
	})
	if err != nil {
		return fmt.Errorf("permissions: %w", err)
	}
	return nil
}

func copyFile(ctx context.Context, fsys FileSystem, src, dst string) error {
	in, err := fsys.Open(src)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer in.Close()
	if err := writeFile(dst, ctxReader{ctx, in}, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

func copyTree(ctx context.Context, fsys FileSystem, src, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	entries, err := fsys.ReadDir(src)
	if err != nil {
		return fmt.Errorf("list %s: %w", src, err)
	}
	for _, e := range entries {
		s, d := path.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if e.IsDir() {
			err = copyTree(ctx, fsys, s, d)
		} else {
			err = copyFile(ctx, fsys, s, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates p from r. It never follows a link at p, so an archive
// cannot write outside its directory through a link it made.
func writeFile(p string, r io.Reader, mode fs.FileMode) error {
	out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ctxReader ends a long download when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// beneath checks that name (slash-separated) stays beneath the directory
// it is relative to, and returns it cleaned; "." is the directory itself.
func beneath(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty name")
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%q is an absolute path", name)
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", fmt.Errorf("%q leads out of its directory", name)
		}
	}
	return path.Clean(name), nil
}

// cleanRelative is beneath for a name that must not be the directory
// itself, as a resource's key.
func cleanRelative(name string) (string, error) {
	clean, err := beneath(name)
	if err == nil && clean == "." {
		err = fmt.Errorf("%q names the directory itself", name)
	}
	return clean, err
}

// mkdirBeneath creates the directories of rel (slash-separated) under
// root, refusing to pass through a symbolic link: following one could
// write outside root (through a link an archive made, or, in a working
// directory, into the shared cache through another resource's link).
func mkdirBeneath(root, rel string) error {
	dir := root
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		dir = filepath.Join(dir, c)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", dir)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		}
	}
	return nil
}

// link makes <workDir>/<rel> a symbolic link to target, replacing a link
// (or file) already there. The new link is made aside and renamed into
// place, so the name never points nowhere.
func link(workDir, rel, target string) error {
	if err := mkdirBeneath(workDir, path.Dir(rel)); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	name := filepath.Join(workDir, filepath.FromSlash(rel))
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(name), ".weft-link-"+hex.EncodeToString(suffix[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("link: %w", err)
	}
	return nil
}
