package localizer

import (
	"archive/tar"
	"archive/zip"
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

// entry is one member of a test archive.
type entry struct {
	name, body string
	mode       int64
	typ        byte // tar type; 0 is a regular file
	link       string
}

func zipBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := fs.FileMode(e.mode)
		if strings.HasSuffix(e.name, "/") {
			mode |= fs.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tarBytes(t *testing.T, gz bool, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: typ, Linkname: e.link, ModTime: time.Unix(1, 0)}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// writeSource writes a source file and returns its modification time in
// milliseconds, the resource timestamp an application would record.
func writeSource(t *testing.T, p string, data []byte) int64 {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return mtime(t, p)
}

func mtime(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime().UnixMilli()
}

// resource is a PUBLIC resource, the one visibility that needs neither a
// user nor an application; TestScopes tries the others.
func resource(key string, u *yarnpb.URLProto, ts int64, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
	return &yarnpb.StringLocalResourceMapProto{Key: &key, Value: &yarnpb.LocalResourceProto{
		Resource: u, Timestamp: &ts, Type: &typ,
		Visibility: yarnpb.LocalResourceVisibilityProto_PUBLIC.Enum(),
	}}
}

func fileURL(p string) *yarnpb.URLProto {
	scheme := "file"
	return &yarnpb.URLProto{Scheme: &scheme, File: &p}
}

func readLink(t *testing.T, workDir, key string) string {
	t.Helper()
	p := filepath.Join(workDir, key)
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("%s is %v, want a symbolic link", key, fi.Mode())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantFile(t *testing.T, p, body string, exec bool) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v, want a file", p, fi.Mode())
	}
	if got := fi.Mode().Perm()&0o100 != 0; got != exec {
		t.Errorf("%s mode %v, executable %v, want %v", p, fi.Mode(), got, exec)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != body {
		t.Errorf("%s holds %q, want %q", p, b, body)
	}
}

func TestLocalize(t *testing.T) {
	const (
		ARCHIVE = yarnpb.LocalResourceTypeProto_ARCHIVE
		FILE    = yarnpb.LocalResourceTypeProto_FILE
		PATTERN = yarnpb.LocalResourceTypeProto_PATTERN
	)
	archive := []entry{
		{name: "bin/", mode: 0o755, typ: tar.TypeDir},
		{name: "bin/run.sh", body: "#!/bin/sh\n", mode: 0o755},
		{name: "lib/a.txt", body: "a", mode: 0o644},
	}
	tests := []struct {
		name string
		// setup makes sources under src and returns the resources.
		setup func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto
		// check looks at the working directory after success.
		check   func(t *testing.T, work string)
		wantErr []string
	}{{
		name: "file copied and linked under its key, parents made",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "job.xml")
			ts := writeSource(t, p, []byte("<configuration/>"))
			return []*yarnpb.StringLocalResourceMapProto{
				resource("job.xml", fileURL(p), ts, FILE),
				resource("conf/nested/job.xml", fileURL(p), ts, FILE),
			}
		},
		check: func(t *testing.T, work string) {
			for _, key := range []string{"job.xml", "conf/nested/job.xml"} {
				if got := readLink(t, work, key); got != "<configuration/>" {
					t.Errorf("%s = %q", key, got)
				}
			}
			// FSDownload makes every localized file executable.
			wantFile(t, filepath.Join(work, "job.xml"), "<configuration/>", true)
			to, _ := os.Readlink(filepath.Join(work, "job.xml"))
			if !filepath.IsAbs(to) || filepath.Base(to) != "job.xml" {
				t.Errorf("link leads to %q, want the cached job.xml by absolute path", to)
			}
		},
	}, {
		name: "directory copied recursively",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			d := filepath.Join(src, "conf")
			writeSource(t, filepath.Join(d, "core-site.xml"), []byte("core"))
			writeSource(t, filepath.Join(d, "sub", "x"), []byte("x"))
			return []*yarnpb.StringLocalResourceMapProto{resource("conf", fileURL(d), mtime(t, d), FILE)}
		},
		check: func(t *testing.T, work string) {
			wantFile(t, filepath.Join(work, "conf", "core-site.xml"), "core", true)
			wantFile(t, filepath.Join(work, "conf", "sub", "x"), "x", true)
		},
	}, {
		name: "jar, zip, tar.gz and tar archives unpacked, executables kept",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			var rs []*yarnpb.StringLocalResourceMapProto
			for name, data := range map[string][]byte{
				"app.jar":    zipBytes(t, archive),
				"app.ZIP":    zipBytes(t, archive),
				"app.tar.gz": tarBytes(t, true, archive),
				"app.tgz":    tarBytes(t, true, archive),
				"app.tar":    tarBytes(t, false, archive),
			} {
				p := filepath.Join(src, name)
				rs = append(rs, resource(name, fileURL(p), writeSource(t, p, data), ARCHIVE))
			}
			return rs
		},
		check: func(t *testing.T, work string) {
			for _, key := range []string{"app.jar", "app.ZIP", "app.tar.gz", "app.tgz", "app.tar"} {
				wantFile(t, filepath.Join(work, key, "bin", "run.sh"), "#!/bin/sh\n", true)
				wantFile(t, filepath.Join(work, key, "lib", "a.txt"), "a", true)
			}
		},
	}, {
		name: "tar links within the archive kept",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "links.tgz")
			data := tarBytes(t, true, []entry{
				{name: "./", typ: tar.TypeDir, mode: 0o755},
				{name: "./lib/real.so", body: "so", mode: 0o644},
				{name: "./lib/alias.so", typ: tar.TypeSymlink, link: "real.so"},
				{name: "./top.so", typ: tar.TypeSymlink, link: "lib/../lib/real.so"},
				{name: "./hard.so", typ: tar.TypeLink, link: "lib/real.so"},
			})
			return []*yarnpb.StringLocalResourceMapProto{resource("links", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		check: func(t *testing.T, work string) {
			for _, f := range []string{"lib/alias.so", "top.so", "hard.so"} {
				wantFile(t, filepath.Join(work, "links", f), "so", true)
			}
		},
	}, {
		name: "archive of another name copied as a file",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "data.bin")
			return []*yarnpb.StringLocalResourceMapProto{resource("data", fileURL(p), writeSource(t, p, zipBytes(t, archive)), ARCHIVE)}
		},
		check: func(t *testing.T, work string) {
			if fi, err := os.Stat(filepath.Join(work, "data")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("data: %v, %v; want a file", fi, err)
			}
		},
	}, {
		name: "FILE jar not unpacked",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "lib.jar")
			return []*yarnpb.StringLocalResourceMapProto{resource("lib.jar", fileURL(p), writeSource(t, p, zipBytes(t, archive)), FILE)}
		},
		check: func(t *testing.T, work string) {
			if fi, err := os.Stat(filepath.Join(work, "lib.jar")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("lib.jar: %v, %v; want a file", fi, err)
			}
		},
	}, {
		name: "PATTERN jar unpacked beside itself, as MapReduce's job.jar",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "job.jar")
			data := zipBytes(t, []entry{{name: "classes/Main.class", body: "cafe", mode: 0o644}, {name: "lib/dep.jar", body: "dep", mode: 0o644}})
			r := resource("job.jar", fileURL(p), writeSource(t, p, data), PATTERN)
			r.Value.Pattern = ptr("(?:classes/|lib/).*")
			return []*yarnpb.StringLocalResourceMapProto{r}
		},
		check: func(t *testing.T, work string) {
			wantFile(t, filepath.Join(work, "job.jar", "classes", "Main.class"), "cafe", true)
			wantFile(t, filepath.Join(work, "job.jar", "lib", "dep.jar"), "dep", true)
			if _, err := zip.OpenReader(filepath.Join(work, "job.jar", "job.jar")); err != nil {
				t.Errorf("job.jar/job.jar: %v", err)
			}
		},
	}, {
		name: "timestamp differs from the source's",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			ts := writeSource(t, p, []byte("x"))
			return []*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), ts-1000, FILE)}
		},
		wantErr: []string{`localize "x.txt"`, " changed on src filesystem (expected "},
	}, {
		name: "timestamp 0 checked too, as FSDownload does",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			writeSource(t, p, []byte("x"))
			return []*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), 0, FILE)}
		},
		wantErr: []string{"changed on src filesystem (expected 0, was "},
	}, {
		name: "size equal to the source's",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("x.txt", fileURL(p), writeSource(t, p, []byte("xyz")), FILE), 3)}
		},
		check: func(t *testing.T, work string) { wantFile(t, filepath.Join(work, "x.txt"), "xyz", true) },
	}, {
		name: "size unknown (-1) not checked",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("x.txt", fileURL(p), writeSource(t, p, []byte("xyz")), FILE), -1)}
		},
		check: func(t *testing.T, work string) { wantFile(t, filepath.Join(work, "x.txt"), "xyz", true) },
	}, {
		name: "size of a directory not checked",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			d := filepath.Join(src, "conf")
			writeSource(t, filepath.Join(d, "core-site.xml"), []byte("core"))
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("conf", fileURL(d), mtime(t, d), FILE), 12345)}
		},
		check: func(t *testing.T, work string) {
			wantFile(t, filepath.Join(work, "conf", "core-site.xml"), "core", true)
		},
	}, {
		name: "size differs from the source's",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("x.txt", fileURL(p), writeSource(t, p, []byte("x")), FILE), 5)}
		},
		wantErr: []string{`localize "x.txt"`, " changed on src filesystem (expected size 5, was 1)"},
	}, {
		name: "archive size checked before unpacking",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "app.zip")
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("app", fileURL(p), writeSource(t, p, zipBytes(t, archive)), ARCHIVE), 1)}
		},
		wantErr: []string{"changed on src filesystem (expected size 1, was "},
	}, {
		name: "timestamp checked before size",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x.txt")
			writeSource(t, p, []byte("x"))
			return []*yarnpb.StringLocalResourceMapProto{withSize(resource("x.txt", fileURL(p), 0, FILE), 5)}
		},
		wantErr: []string{"changed on src filesystem (expected 0, was "},
	}, {
		name: "missing source",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			return []*yarnpb.StringLocalResourceMapProto{resource("gone", fileURL(filepath.Join(src, "gone")), 1, FILE)}
		},
		wantErr: []string{`localize "gone"`, "no such file"},
	}, {
		name: "zip entry climbing out",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "evil.zip")
			data := zipBytes(t, []entry{{name: "ok.txt", body: "ok"}, {name: "a/../../evil.txt", body: "evil"}})
			return []*yarnpb.StringLocalResourceMapProto{resource("evil", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		wantErr: []string{"unpack", "leads out of its directory"},
	}, {
		name: "tar entry with an absolute path",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "evil.tar")
			data := tarBytes(t, false, []entry{{name: "/tmp/evil.txt", body: "evil"}})
			return []*yarnpb.StringLocalResourceMapProto{resource("evil", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		wantErr: []string{"unpack", "is an absolute path"},
	}, {
		name: "tar link leading out",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "evil.tgz")
			data := tarBytes(t, true, []entry{{name: "d/out", typ: tar.TypeSymlink, link: "../../outside"}})
			return []*yarnpb.StringLocalResourceMapProto{resource("evil", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		wantErr: []string{"unpack", "leads out of the archive"},
	}, {
		name: "tar file written through a link",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "evil.tgz")
			data := tarBytes(t, true, []entry{
				{name: "d", typ: tar.TypeSymlink, link: "."},
				{name: "d/x", body: "x"},
			})
			return []*yarnpb.StringLocalResourceMapProto{resource("evil", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		wantErr: []string{"unpack", "is a symbolic link"},
	}, {
		name: "tar chain of links leading out",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "evil.tgz")
			// Each link stays inside by its name; together they reach
			// the archive's parent.
			data := tarBytes(t, true, []entry{
				{name: "sub/", typ: tar.TypeDir, mode: 0o755},
				{name: "sub/up", typ: tar.TypeSymlink, link: ".."},
				{name: "sub/out", typ: tar.TypeSymlink, link: "up/.."},
			})
			return []*yarnpb.StringLocalResourceMapProto{resource("evil", fileURL(p), writeSource(t, p, data), ARCHIVE)}
		},
		wantErr: []string{"unpack", "sub/out: link leads out of the archive"},
	}, {
		name: "unknown scheme",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			scheme, host, file := "s3a", "bucket", "/x.jar"
			return []*yarnpb.StringLocalResourceMapProto{resource("x.jar", &yarnpb.URLProto{Scheme: &scheme, Host: &host, File: &file}, 1, FILE)}
		},
		wantErr: []string{`localize "x.jar" from s3a://bucket/x.jar`, `unsupported filesystem scheme "s3a"`},
	}, {
		name: "key leading out of the working directory",
		setup: func(t *testing.T, src string) []*yarnpb.StringLocalResourceMapProto {
			p := filepath.Join(src, "x")
			return []*yarnpb.StringLocalResourceMapProto{resource("../x", fileURL(p), writeSource(t, p, nil), FILE)}
		},
		wantErr: []string{"invalid resource name"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, work := filepath.Join(dir, "src"), filepath.Join(dir, "work")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			resources := tc.setup(t, src)
			err := Localize(context.Background(), Options{CacheDir: filepath.Join(dir, "cache")}, resources, work)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Localize succeeded, want an error with %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if _, err := os.Lstat(filepath.Join(dir, "outside")); err == nil {
					t.Error("an archive wrote outside its directory")
				}
				noLeftovers(t, filepath.Join(dir, "cache"))
				return
			}
			if err != nil {
				t.Fatalf("Localize: %v", err)
			}
			tc.check(t, work)
			noLeftovers(t, filepath.Join(dir, "cache"))
		})
	}
}

// noLeftovers checks that the cache holds only complete entries and their
// locks: no downloads, half-unpacked trees or trash, at its top or beside
// the entries of a scope.
func noLeftovers(t *testing.T, cache string) {
	t.Helper()
	dirs := []string{cache, filepath.Join(cache, "public")}
	for _, scope := range []string{"private", "app"} {
		subs, _ := filepath.Glob(filepath.Join(cache, scope, "*"))
		dirs = append(dirs, subs...)
	}
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("cache holds leftover %s", filepath.Join(dir, e.Name()))
			}
		}
	}
}

func TestTimestampMessage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.txt")
	ts := writeSource(t, p, []byte("x"))
	err := Localize(context.Background(), Options{CacheDir: filepath.Join(dir, "cache")},
		[]*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), 42, yarnpb.LocalResourceTypeProto_FILE)}, filepath.Join(dir, "work"))
	want := fmt.Sprintf("Resource file:%s changed on src filesystem (expected 42, was %d)", p, ts)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one with %q", err, want)
	}
}

// withSize records the source's size in r, as YARN's clients do.
func withSize(r *yarnpb.StringLocalResourceMapProto, size int64) *yarnpb.StringLocalResourceMapProto {
	r.Value.Size = &size
	return r
}

func TestSizeMessage(t *testing.T) {
	dir := t.TempDir()
	const ts = 1700000000123
	fake := &fakeHDFS{files: map[string]fakeFile{"/apps/lib.jar": {data: "0123456789", mtime: ts}}}
	opts := Options{CacheDir: filepath.Join(dir, "cache"), HDFS: func(context.Context, string, string) (FileSystem, error) { return fake, nil }}
	rs := []*yarnpb.StringLocalResourceMapProto{withSize(hdfsResource("lib.jar", "nn", 0, "/apps/lib.jar", ts, yarnpb.LocalResourceTypeProto_FILE), 11)}
	err := Localize(context.Background(), opts, rs, filepath.Join(dir, "work"))
	want := `localize "lib.jar" from hdfs://nn/apps/lib.jar: Resource hdfs://nn/apps/lib.jar changed on src filesystem (expected size 11, was 10)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if fake.opens != 0 {
		t.Errorf("fetched %d times, want none", fake.opens)
	}
}

func TestReplacesLink(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent", filepath.Join(work, "x.txt")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.txt")
	ts := writeSource(t, p, []byte("new"))
	rs := []*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), ts, yarnpb.LocalResourceTypeProto_FILE)}
	if err := Localize(context.Background(), Options{CacheDir: filepath.Join(dir, "cache")}, rs, work); err != nil {
		t.Fatal(err)
	}
	if got := readLink(t, work, "x.txt"); got != "new" {
		t.Errorf("x.txt = %q, want new", got)
	}
	if es, _ := os.ReadDir(work); len(es) != 1 {
		t.Errorf("working directory holds %d entries, want just x.txt", len(es))
	}
}

func TestCacheHit(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	tests := []struct {
		name string
		data []byte
		typ  yarnpb.LocalResourceTypeProto
		file string // checked beneath the key
	}{
		{"file.txt", []byte("once"), yarnpb.LocalResourceTypeProto_FILE, ""},
		{"archive.zip", zipBytes(t, []entry{{name: "in.txt", body: "once"}}), yarnpb.LocalResourceTypeProto_ARCHIVE, "in.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "src", tc.name)
			rs := []*yarnpb.StringLocalResourceMapProto{resource(tc.name, fileURL(p), writeSource(t, p, tc.data), tc.typ)}
			for i, work := range []string{"work1", "work2"} {
				work = filepath.Join(dir, work, tc.name)
				if err := Localize(context.Background(), Options{CacheDir: cache}, rs, work); err != nil {
					t.Fatalf("Localize %d: %v", i+1, err)
				}
				wantFile(t, filepath.Join(work, tc.name, tc.file), "once", true)
				// Only the cache can serve the second.
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
		})
	}
}

// fakeHDFS stands in for a namenode and its datanodes.
type fakeHDFS struct {
	mu    sync.Mutex
	files map[string]fakeFile
	opens int
}

type fakeFile struct {
	data  string
	mtime int64
	dir   bool
}

type fakeInfo struct {
	name string
	f    fakeFile
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return int64(len(i.f.data)) }
func (i fakeInfo) ModTime() time.Time { return time.UnixMilli(i.f.mtime) }
func (i fakeInfo) IsDir() bool        { return i.f.dir }
func (i fakeInfo) Sys() any           { return nil }
func (i fakeInfo) Mode() fs.FileMode {
	if i.f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (h *fakeHDFS) Stat(p string) (fs.FileInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return fakeInfo{path.Base(p), f}, nil
}

func (h *fakeHDFS) ReadDir(p string) ([]fs.FileInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var infos []fs.FileInfo
	for name, f := range h.files {
		if path.Dir(name) == p {
			infos = append(infos, fakeInfo{path.Base(name), f})
		}
	}
	return infos, nil
}

func (h *fakeHDFS) Open(p string) (io.ReadCloser, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[p]
	if !ok || f.dir {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	h.opens++
	return io.NopCloser(strings.NewReader(f.data)), nil
}

func ptr[T any](v T) *T { return &v }

func hdfsResource(key, host string, port int32, file string, ts int64, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
	u := &yarnpb.URLProto{Scheme: ptr("hdfs"), Host: &host, File: &file}
	if port != 0 {
		u.Port = &port
	}
	return resource(key, u, ts, typ)
}

func TestHDFS(t *testing.T) {
	const ts = 1700000000123
	tests := []struct {
		name         string
		port         int32
		wantNamenode string
		wantURL      string
	}{
		{"default port", 0, "nn.example:8020", "hdfs://nn.example/user/alice/.staging/job.xml"},
		{"port given", 9000, "nn.example:9000", "hdfs://nn.example:9000/user/alice/.staging/job.xml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := &fakeHDFS{files: map[string]fakeFile{
				"/user/alice/.staging/job.xml": {data: "<configuration/>", mtime: ts},
				"/user/alice/libs":             {dir: true, mtime: ts},
				"/user/alice/libs/a.jar":       {data: "a", mtime: 1},
			}}
			var dials []string
			opts := Options{CacheDir: filepath.Join(dir, "cache"), User: "alice",
				HDFS: func(ctx context.Context, namenode, user string) (FileSystem, error) {
					dials = append(dials, namenode+" as "+user)
					return fake, nil
				}}
			rs := []*yarnpb.StringLocalResourceMapProto{
				hdfsResource("job.xml", "nn.example", tc.port, "/user/alice/.staging/job.xml", ts, yarnpb.LocalResourceTypeProto_FILE),
				hdfsResource("libs", "nn.example", tc.port, "/user/alice/libs", ts, yarnpb.LocalResourceTypeProto_FILE),
			}
			work := filepath.Join(dir, "work")
			if err := Localize(context.Background(), opts, rs, work); err != nil {
				t.Fatal(err)
			}
			if want := []string{tc.wantNamenode + " as alice"}; fmt.Sprint(dials) != fmt.Sprint(want) {
				t.Errorf("dialed %v, want %v (one client per namenode)", dials, want)
			}
			wantFile(t, filepath.Join(work, "job.xml"), "<configuration/>", true)
			wantFile(t, filepath.Join(work, "libs", "a.jar"), "a", true)

			rs = []*yarnpb.StringLocalResourceMapProto{hdfsResource("job.xml", "nn.example", tc.port, "/user/alice/.staging/job.xml", ts+1, yarnpb.LocalResourceTypeProto_FILE)}
			err := Localize(context.Background(), opts, rs, work)
			want := fmt.Sprintf("Resource %s changed on src filesystem (expected %d, was %d)", tc.wantURL, ts+1, ts)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one with %q", err, want)
			}
		})
	}
}

func TestHDFSDialError(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CacheDir: filepath.Join(dir, "cache"), HDFS: func(context.Context, string, string) (FileSystem, error) {
		return nil, errors.New("connection refused")
	}}
	rs := []*yarnpb.StringLocalResourceMapProto{hdfsResource("x", "nn", 0, "/x", 1, yarnpb.LocalResourceTypeProto_FILE)}
	err := Localize(context.Background(), opts, rs, filepath.Join(dir, "work"))
	if want := `localize "x" from hdfs://nn/x: connect to namenode nn:8020: connection refused`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestConcurrent has many containers of a node localize one resource at
// once: all succeed and it is fetched once.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	data := string(tarBytes(t, true, []entry{{name: "bin/tool", body: "tool", mode: 0o755}}))
	fake := &fakeHDFS{files: map[string]fakeFile{"/apps/tools.tgz": {data: data, mtime: 5}}}
	opts := Options{CacheDir: filepath.Join(dir, "cache"), HDFS: func(context.Context, string, string) (FileSystem, error) { return fake, nil }}
	rs := []*yarnpb.StringLocalResourceMapProto{hdfsResource("tools", "nn", 0, "/apps/tools.tgz", 5, yarnpb.LocalResourceTypeProto_ARCHIVE)}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Localize(context.Background(), opts, rs, filepath.Join(dir, fmt.Sprintf("work%d", i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Localize %d: %v", i, err)
		}
		wantFile(t, filepath.Join(dir, fmt.Sprintf("work%d", i), "tools", "bin", "tool"), "tool", true)
	}
	if fake.opens != 1 {
		t.Errorf("fetched %d times, want once", fake.opens)
	}
}

func TestCanceled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	rs := []*yarnpb.StringLocalResourceMapProto{resource("x", fileURL(p), writeSource(t, p, []byte("x")), yarnpb.LocalResourceTypeProto_FILE)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Localize(ctx, Options{CacheDir: filepath.Join(dir, "cache")}, rs, filepath.Join(dir, "work")); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestURLString(t *testing.T) {
	tests := []struct {
		u    *yarnpb.URLProto
		want string
	}{
		{&yarnpb.URLProto{Scheme: ptr("hdfs"), Host: ptr("nn"), Port: ptr(int32(8020)), File: ptr("/a/b.jar")}, "hdfs://nn:8020/a/b.jar"},
		{&yarnpb.URLProto{Scheme: ptr("hdfs"), Host: ptr("nn"), File: ptr("/a")}, "hdfs://nn/a"},
		{&yarnpb.URLProto{Scheme: ptr("hdfs"), Host: ptr("nn"), Port: ptr(int32(-1)), File: ptr("/a")}, "hdfs://nn/a"},
		{&yarnpb.URLProto{Scheme: ptr("webhdfs"), UserInfo: ptr("bob"), Host: ptr("nn"), Port: ptr(int32(9870)), File: ptr("/a")}, "webhdfs://bob@nn:9870/a"},
		{&yarnpb.URLProto{Scheme: ptr("file"), File: ptr("/tmp/x")}, "file:/tmp/x"},
	}
	for _, tc := range tests {
		if got := URLString(tc.u); got != tc.want {
			t.Errorf("URLString(%v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

// linkedEntry returns the cache entry a localized key links into.
func linkedEntry(t *testing.T, work, key string) string {
	t.Helper()
	to, err := os.Readlink(filepath.Join(work, key))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(to)
}

func TestScopes(t *testing.T) {
	const app = "application_1_0001"
	var (
		PUBLIC      = yarnpb.LocalResourceVisibilityProto_PUBLIC.Enum()
		PRIVATE     = yarnpb.LocalResourceVisibilityProto_PRIVATE.Enum()
		APPLICATION = yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum()
	)
	tests := []struct {
		name       string
		visibility *yarnpb.LocalResourceVisibilityProto // nil leaves it unset
		user, app  string
		wantScope  string // beneath the cache
		wantErr    string
	}{
		{name: "public", visibility: PUBLIC, user: "alice", app: app, wantScope: "public"},
		{name: "public without user or app", visibility: PUBLIC, wantScope: "public"},
		{name: "private", visibility: PRIVATE, user: "alice", app: app, wantScope: "private/alice"},
		{name: "private of a Kerberos principal", visibility: PRIVATE, user: "alice@EXAMPLE.COM", wantScope: "private/alice@EXAMPLE.COM"},
		{name: "application", visibility: APPLICATION, user: "alice", app: app, wantScope: "app/" + app},
		{name: "unset with an application", user: "alice", app: app, wantScope: "app/" + app},
		{name: "unset without one", user: "alice", wantScope: "public"},
		{name: "private without user", visibility: PRIVATE, app: app, wantErr: "PRIVATE resource: no user"},
		{name: "private of user ..", visibility: PRIVATE, user: "..", wantErr: `PRIVATE resource: invalid user ".."`},
		{name: "private of user a/b", visibility: PRIVATE, user: "a/b", wantErr: `invalid user "a/b"`},
		{name: "private of a hidden user", visibility: PRIVATE, user: ".trash-x", wantErr: `invalid user ".trash-x"`},
		{name: "application without app", visibility: APPLICATION, user: "alice", wantErr: "APPLICATION resource: no application id"},
		{name: "application ../public", visibility: APPLICATION, app: "../public", wantErr: `invalid application id "../public"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache, work := filepath.Join(dir, "cache"), filepath.Join(dir, "work")
			p := filepath.Join(dir, "x.txt")
			r := resource("x.txt", fileURL(p), writeSource(t, p, []byte("x")), yarnpb.LocalResourceTypeProto_FILE)
			r.Value.Visibility = tc.visibility
			err := Localize(context.Background(), Options{CacheDir: cache, User: tc.user, App: tc.app}, []*yarnpb.StringLocalResourceMapProto{r}, work)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				if _, err := os.Lstat(filepath.Join(work, "x.txt")); err == nil {
					t.Error("x.txt linked all the same")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			entry := linkedEntry(t, work, "x.txt")
			if got, want := filepath.Dir(entry), filepath.Join(cache, filepath.FromSlash(tc.wantScope)); got != want {
				t.Errorf("cached in %s, want %s", got, want)
			}
			if _, err := os.Stat(entry + ".lock"); err != nil {
				t.Errorf("entry's lock: %v", err)
			}
			noLeftovers(t, cache)
		})
	}
}

func TestRemoveApp(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "x.txt")
	ts := writeSource(t, p, []byte("x"))
	appRes := resource("x.txt", fileURL(p), ts, yarnpb.LocalResourceTypeProto_FILE)
	appRes.Value.Visibility = yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum()
	pubRes := resource("pub.txt", fileURL(p), ts, yarnpb.LocalResourceTypeProto_FILE)
	rs := []*yarnpb.StringLocalResourceMapProto{appRes, pubRes}
	entries := map[string]string{}
	for _, app := range []string{"application_1_0001", "application_1_0002"} {
		work := filepath.Join(dir, app)
		if err := Localize(context.Background(), Options{CacheDir: cache, App: app}, rs, work); err != nil {
			t.Fatal(err)
		}
		entries[app] = linkedEntry(t, work, "x.txt")
		entries["public"] = linkedEntry(t, work, "pub.txt")
	}
	if err := RemoveApp(cache, "application_1_0001"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(AppCacheDir(cache, "application_1_0001")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("application_1_0001's resources: %v, want them gone", err)
	}
	for _, kept := range []string{"application_1_0002", "public"} {
		if _, err := os.Stat(entries[kept]); err != nil {
			t.Errorf("%s's entry: %v", kept, err)
		}
	}
	if err := RemoveApp(cache, "application_1_0001"); err != nil {
		t.Errorf("RemoveApp again: %v, want nothing to do", err)
	}
	for _, bad := range []string{"", ".", "..", "../app", "a/b"} {
		if err := RemoveApp(cache, bad); err == nil {
			t.Errorf("RemoveApp(%q) succeeded", bad)
		}
	}
	if _, err := os.Stat(entries["application_1_0002"]); err != nil {
		t.Errorf("application_1_0002's entry: %v", err)
	}
	noLeftovers(t, cache)
}

// TestMarksUse checks that a fetch and a cache hit both mark the entry
// used, the last use being what CacheCleaner goes by.
func TestMarksUse(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "x.txt")
	rs := []*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), writeSource(t, p, []byte("x")), yarnpb.LocalResourceTypeProto_FILE)}
	before := time.Now().Add(-time.Second)
	if err := Localize(context.Background(), Options{CacheDir: cache}, rs, filepath.Join(dir, "work1")); err != nil {
		t.Fatal(err)
	}
	entry := linkedEntry(t, filepath.Join(dir, "work1"), "x.txt")
	fi, err := os.Stat(entry)
	if err != nil {
		t.Fatal(err)
	}
	if fi.ModTime().Before(before) {
		t.Errorf("fetched entry last used %v, want since %v", fi.ModTime(), before)
	}
	long := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(entry, long, long); err != nil {
		t.Fatal(err)
	}
	if err := Localize(context.Background(), Options{CacheDir: cache}, rs, filepath.Join(dir, "work2")); err != nil {
		t.Fatal(err)
	}
	if got := linkedEntry(t, filepath.Join(dir, "work2"), "x.txt"); got != entry {
		t.Fatalf("second localization linked %s, want the cached %s", got, entry)
	}
	if fi, err = os.Stat(entry); err != nil {
		t.Fatal(err)
	}
	if fi.ModTime().Before(before) {
		t.Errorf("cache hit left the entry last used %v, want since %v", fi.ModTime(), before)
	}
}

// TestCacheHitLock checks which locks a cache hit waits for: not another
// localizer's shared one, but a cleaner's exclusive one.
func TestCacheHitLock(t *testing.T) {
	tests := []struct {
		name    string
		how     int
		wantErr error
	}{
		{"shared lock held by another localizer", syscall.LOCK_SH, nil},
		{"exclusive lock held by a cleaner", syscall.LOCK_EX, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "cache")
			p := filepath.Join(dir, "x.txt")
			rs := []*yarnpb.StringLocalResourceMapProto{resource("x.txt", fileURL(p), writeSource(t, p, []byte("x")), yarnpb.LocalResourceTypeProto_FILE)}
			if err := Localize(context.Background(), Options{CacheDir: cache}, rs, filepath.Join(dir, "work1")); err != nil {
				t.Fatal(err)
			}
			entry := linkedEntry(t, filepath.Join(dir, "work1"), "x.txt")
			unlock, err := lockFile(context.Background(), entry+".lock", tc.how)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err = Localize(ctx, Options{CacheDir: cache}, rs, filepath.Join(dir, "work2"))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Localize: %v, want %v", err, tc.wantErr)
			}
		})
	}
}
