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
// resource is fetched once per (URL, timestamp, type) and visibility
// scope, and concurrent localizers of one node coordinate through the cache
// directory alone: a shared lock on an entry while linking it, an exclusive
// one while fetching or (CacheCleaner) deleting it.
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

	"github.com/weft-sh/weft/bigdataplugin/internal/dirs"
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
	// <scope>/<hash of URL, timestamp and type>/<source base name>, so a
	// source changed since (with a new timestamp) is a different entry.
	// The scope is the resource's visibility, as YARN keeps them apart:
	// <CacheDir>/public for PUBLIC resources, <CacheDir>/private/<User>
	// for PRIVATE ones and AppCacheDir(CacheDir, App) for APPLICATION
	// ones.
	CacheDir string
	// User is who reads HDFS, with SIMPLE authentication; empty means the
	// user this process runs as. It names the scope of PRIVATE resources,
	// which therefore need it.
	User string
	// App is the application the container belongs to
	// (application_<cluster timestamp>_<n>). It names the scope of
	// APPLICATION resources, which therefore need it, and is the
	// visibility of resources that give none.
	App string
	// RefsFile, when set, receives the cache entries the container links
	// (WriteRefs), which a CacheCleaner must keep while it lives.
	RefsFile string
	// HDFS opens the filesystem of a namenode (host:port). The default
	// uses github.com/colinmarc/hdfs/v2. A FileSystem that is also an
	// io.Closer is closed when Localize returns.
	HDFS func(ctx context.Context, namenode, user string) (FileSystem, error)
}

// defaultHDFSPort is the namenode's RPC port when a URL names none, as
// fs.defaultFS conventionally does.
const defaultHDFSPort = 8020

// The scope directories of the cache, one per visibility.
const (
	publicScope  = "public"
	privateScope = "private"
	appScope     = "app"
)

// AppCacheDir is the directory holding the cached APPLICATION resources
// of app.
func AppCacheDir(cacheDir, app string) string {
	return filepath.Join(cacheDir, appScope, app)
}

// RemoveApp deletes the cached APPLICATION resources of app, as a
// NodeManager does when an application finishes. The directory is first
// renamed aside, so that nothing ever finds a half-deleted entry where a
// whole one was; a trash left by a crash is removed by CacheCleaner.
func RemoveApp(cacheDir, app string) error {
	if err := checkName("application id", app); err != nil {
		return fmt.Errorf("remove application resources: %w", err)
	}
	trash, err := trashName(cacheDir)
	if err != nil {
		return fmt.Errorf("remove resources of %s: %w", app, err)
	}
	if err := os.Rename(AppCacheDir(cacheDir, app), trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // it had none, or they are gone already
		}
		return fmt.Errorf("remove resources of %s: %w", app, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove resources of %s: %w", app, err)
	}
	return nil
}

// scopeDir is the directory holding the cache entry of r. Separate
// directories, rather than the visibility in the hash, keep one user's
// PRIVATE resources from being found by anyone who knows their URL, and
// let an application's resources go at once when it finishes.
func scopeDir(cacheDir string, opts Options, r *yarnpb.LocalResourceProto) (string, error) {
	v := r.GetVisibility()
	if r.Visibility == nil {
		// Unset is PUBLIC to protobuf, but YARN's own clients default
		// to APPLICATION, the narrowest scope that lets the containers
		// of one application share a fetch. Without an application
		// there is no such scope to fall back to.
		v = yarnpb.LocalResourceVisibilityProto_PUBLIC
		if opts.App != "" {
			v = yarnpb.LocalResourceVisibilityProto_APPLICATION
		}
	}
	switch v {
	case yarnpb.LocalResourceVisibilityProto_PUBLIC:
		return filepath.Join(cacheDir, publicScope), nil
	case yarnpb.LocalResourceVisibilityProto_PRIVATE:
		if err := checkName("user", opts.User); err != nil {
			return "", fmt.Errorf("PRIVATE resource: %w", err)
		}
		return filepath.Join(cacheDir, privateScope, opts.User), nil
	case yarnpb.LocalResourceVisibilityProto_APPLICATION:
		if err := checkName("application id", opts.App); err != nil {
			return "", fmt.Errorf("APPLICATION resource: %w", err)
		}
		return AppCacheDir(cacheDir, opts.App), nil
	}
	return "", fmt.Errorf("unknown visibility %v", v)
}

// checkName refuses a user or application name that cannot be a single
// directory's name: it would put entries outside their scope ("..",
// "a/b"), or among the cache's own files (".trash-..."), or, in RemoveApp,
// delete more than one application's resources.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("no %s", what)
	case strings.HasPrefix(name, "."), strings.ContainsAny(name, "/\\\x00"), len(name) > 255:
		return fmt.Errorf("invalid %s %q", what, name)
	}
	return nil
}

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
	var refs []string
	for _, kv := range resources {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("localize: %w", err)
		}
		entry, err := localizeOne(ctx, opts, cacheDir, hdfsClients, kv.GetKey(), kv.GetValue(), workDir)
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(cacheDir, entry); err == nil {
			refs = append(refs, rel)
		}
	}
	if opts.RefsFile != "" {
		if err := WriteRefs(opts.RefsFile, refs); err != nil {
			return fmt.Errorf("localize: %w", err)
		}
	}
	return nil
}

// WriteRefs records the cache entries (relative to the cache directory)
// a container links, one per line, whole or not at all.
func WriteRefs(name string, entries []string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("references: %w", err)
	}
	if err := dirs.WriteFileAtomic(name, []byte(strings.Join(entries, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("references: %w", err)
	}
	return nil
}

// RefsInUse reads the references files matching pattern (a
// filepath.Glob pattern) and returns the entries they name, as
// absolute paths under cacheDir: a CacheCleaner's InUse.
func RefsInUse(cacheDir, pattern string) (map[string]bool, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("references: %w", err)
	}
	inUse := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the application ended meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("references: %w", err)
		}
		for _, rel := range strings.Split(string(b), "\n") {
			if rel = strings.TrimSpace(rel); rel != "" && filepath.IsLocal(rel) {
				inUse[filepath.Join(cacheDir, rel)] = true
			}
		}
	}
	return inUse, nil
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

// localizeOne localizes one resource and returns its cache entry.
func localizeOne(ctx context.Context, opts Options, cacheDir string, hdfsClients map[string]FileSystem, key string, r *yarnpb.LocalResourceProto, workDir string) (entry string, err error) {
	u := r.GetResource()
	url := URLString(u)
	fail := func(err error) (string, error) { return "", fmt.Errorf("localize %q from %s: %w", key, url, err) }
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
	scope, err := scopeDir(cacheDir, opts, r)
	if err != nil {
		return fail(err)
	}
	err = cache(ctx, cacheDir, scope, src, r, func(cached string) error {
		entry = filepath.Dir(cached)
		return link(workDir, rel, cached)
	})
	if err != nil {
		return fail(err)
	}
	return entry, nil
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

// cache hands the cached copy of a resource to use (which links it),
// fetching it into the scope directory first if the cache lacks it.
// Entries appear only by renaming a complete download into place, so an
// entry that exists is whole. The entry's lock is held throughout: shared
// for a cache hit, so the containers of a node link one entry at once,
// exclusive for a fetch, so the localizers of concurrent containers do not
// fetch one resource twice; either way a CacheCleaner, which needs the
// exclusive lock, cannot delete the entry before it is linked.
func cache(ctx context.Context, cacheDir, scope string, src source, r *yarnpb.LocalResourceProto, use func(cached string) error) error {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", src.id, r.GetTimestamp(), r.GetType())))
	entry := filepath.Join(scope, hex.EncodeToString(sum[:16]))
	target := filepath.Join(entry, baseName(src.path))
	if err := os.MkdirAll(scope, 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	unlock, err := lockFile(ctx, entry+".lock", syscall.LOCK_SH)
	if err != nil {
		return err
	}
	hit, err := useCached(entry, target, use)
	unlock()
	if hit || err != nil {
		return err
	}
	// flock cannot upgrade a lock atomically, so the entry is looked for
	// again once ours is exclusive.
	unlock, err = lockFile(ctx, entry+".lock", syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if hit, err := useCached(entry, target, use); hit || err != nil {
		return err // fetched by another localizer while we waited
	}
	tmp, err := os.MkdirTemp(cacheDir, ".fetch-")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := download(ctx, cacheDir, src, r, filepath.Join(tmp, baseName(src.path))); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp, entry); err != nil {
		// Someone not holding our lock (a localizer of another design,
		// or a lock on a filesystem without flock) may have won; theirs
		// is as good as ours.
		if hit, _ := useCached(entry, target, use); hit {
			return nil
		}
		return fmt.Errorf("cache: %w", err)
	}
	return useEntry(entry, target, use)
}

// useCached is useEntry if the entry exists; hit tells whether it did.
// The caller holds the entry's lock.
func useCached(entry, target string, use func(string) error) (hit bool, err error) {
	if _, err := os.Lstat(entry); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("cache: %w", err)
	}
	return true, useEntry(entry, target, use)
}

// useEntry hands target to use, then records the use as the entry
// directory's modification time, which nothing else changes once the
// entry is in place: CacheCleaner deletes the least recently used entries
// first, and none used lately. It is recorded after linking, so that a
// cleaner that read the node's references before this container's were
// written finds the entry used since it began.
func useEntry(entry, target string, use func(string) error) error {
	if err := use(target); err != nil {
		return err
	}
	now := time.Now()
	if err := os.Chtimes(entry, now, now); err != nil {
		return fmt.Errorf("cache: mark used: %w", err)
	}
	return nil
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

// lockFile takes a flock on name, shared or exclusive as how
// (syscall.LOCK_SH or LOCK_EX) says, polling so that ctx can end the wait.
// The lock file stays: removing it would let a later localizer lock a
// different inode than one still waiting.
func lockFile(ctx context.Context, name string, how int) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	for {
		ok, err := flock(f, how)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", name, err)
		}
		if ok {
			// Closing the file releases the lock.
			return func() { f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tryLockFile is lockFile without the wait: ok is false, and unlock nil,
// when another holds a conflicting lock.
func tryLockFile(name string, how int) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("cache lock: %w", err)
	}
	ok, err = flock(f, how)
	if err != nil || !ok {
		f.Close()
		if err != nil {
			return nil, false, fmt.Errorf("cache lock %s: %w", name, err)
		}
		return nil, false, nil
	}
	return func() { f.Close() }, true, nil
}

// flock tries once to lock f; ok is false when the lock is busy.
func flock(f *os.File, how int) (ok bool, err error) {
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		return false, nil
	}
	return false, err
}

// download verifies a resource and fetches it to dst, unpacking it as its
// type and name say, as FSDownload.verifyAndCopy and unpack do.
func download(ctx context.Context, cacheDir string, src source, r *yarnpb.LocalResourceProto, dst string) error {
	fi, err := src.fsys.Stat(src.path)
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	// FSDownload compares the timestamp, always (0 included), so that is
	// checked first, and its message is the one a job sees.
	if mtime := fi.ModTime().UnixMilli(); mtime != r.GetTimestamp() {
		return fmt.Errorf("Resource %s changed on src filesystem (expected %d, was %d)", src.url, r.GetTimestamp(), mtime)
	}
	// FSDownload does not compare the size, but a file whose size is not
	// the one recorded has changed all the same (rewritten within the
	// same millisecond, or copied with its time kept). Clients that do
	// not know the size record 0 or -1, and a directory has none.
	if want := r.GetSize(); want > 0 && !fi.IsDir() && fi.Size() != want {
		return fmt.Errorf("Resource %s changed on src filesystem (expected size %d, was %d)", src.url, want, fi.Size())
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
	suffix, err := randomSuffix()
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(name), ".weft-link-"+suffix)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("link: %w", err)
	}
	return nil
}

// randomSuffix makes the names of files set aside unique.
func randomSuffix() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
