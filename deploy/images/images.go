// Package images builds the container images of the local test cluster on
// this machine, with no registry and no Docker engine: each image is a
// single deterministic layer assembled from files on this host, written as
// an image archive and imported into containerd's k8s.io namespace, where
// the kubelet finds it by name.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one file, directory or symlink of an image's root filesystem.
type Entry struct {
	// Path inside the image, absolute.
	Path string
	// Mode bits (permissions and sticky bit).
	Mode int64
	// Exactly one of these: the host file to copy, literal content, a
	// symlink target, or (all empty) a directory.
	Source  string
	Content []byte
	Link    string
}

// Image is an image to build.
type Image struct {
	// Ref is the name the kubelet asks containerd for, e.g.
	// "weft.local/pause:3.10".
	Ref        string
	Entries    []Entry
	Entrypoint []string
	Cmd        []string
	Env        []string
}

// epoch is every entry's modification time, so that the same inputs give
// the same layer digest and an unchanged image is not imported again.
var epoch = time.Unix(0, 0)

// layerTar writes the image's root filesystem as an uncompressed tar, parent
// directories first.
func (img Image) layerTar() ([]byte, error) {
	entries := append([]Entry(nil), img.Entries...)
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.Source == "" && e.Content == nil && e.Link == "" {
			dirs[path.Clean(e.Path)] = true
		}
	}
	for _, e := range img.Entries {
		for d := path.Dir(path.Clean(e.Path)); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			entries = append(entries, Entry{Path: d, Mode: 0o755})
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return path.Clean(entries[i].Path) < path.Clean(entries[j].Path) })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    strings.TrimPrefix(path.Clean(e.Path), "/"),
			Mode:    e.Mode,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		var body []byte
		switch {
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.Link, 0o777
		case e.Source != "":
			b, err := os.ReadFile(e.Source)
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", img.Ref, err)
			}
			body = b
		case e.Content != nil:
			body = e.Content
		default:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		}
		if h.Typeflag == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Build assembles the image.
func (img Image) Build() (v1.Image, error) {
	layerBytes, err := img.layerTar()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", img.Ref, err)
	}
	out, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env = img.Entrypoint, img.Cmd, img.Env
	return mutate.ConfigFile(out, cf)
}

// Importer loads images into a containerd.
type Importer struct {
	// Address is containerd's socket.
	Address string
	// Dir keeps the archives and, per image, the digest last imported.
	Dir string
}

// Import builds img and imports it unless containerd already holds the
// same digest under its name. It reports whether it imported.
func (im Importer) Import(ctx context.Context, img Image) (bool, error) {
	built, err := img.Build()
	if err != nil {
		return false, err
	}
	digest, err := built.Digest()
	if err != nil {
		return false, err
	}
	ref, err := name.ParseReference(img.Ref)
	if err != nil {
		return false, fmt.Errorf("image %s: %w", img.Ref, err)
	}
	base := strings.NewReplacer("/", "_", ":", "_").Replace(img.Ref)
	stamp := filepath.Join(im.Dir, base+".digest")
	if prev, err := os.ReadFile(stamp); err == nil && string(prev) == digest.String() && im.has(ctx, ref.Name()) {
		return false, nil
	}
	if err := os.MkdirAll(im.Dir, 0o755); err != nil {
		return false, err
	}
	archive := filepath.Join(im.Dir, base+".tar")
	if err := tarball.WriteToFile(archive, ref, built); err != nil {
		return false, fmt.Errorf("image %s: write archive: %w", img.Ref, err)
	}
	out, err := im.ctr(ctx, "images", "import", archive)
	if err != nil {
		return false, fmt.Errorf("image %s: import: %w: %s", img.Ref, err, out)
	}
	return true, os.WriteFile(stamp, []byte(digest.String()), 0o644)
}

func (im Importer) has(ctx context.Context, ref string) bool {
	out, err := im.ctr(ctx, "images", "ls", "-q", "name=="+ref)
	return err == nil && strings.TrimSpace(string(out)) == ref
}

func (im Importer) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", im.Address, "-n", "k8s.io"}, args...)...)
	return cmd.CombinedOutput()
}
