package localizer

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path"

	"github.com/colinmarc/hdfs/v2"
)

// localFS serves file: URLs from this machine's filesystem. It follows
// symbolic links, as Hadoop's LocalFileSystem does.
type localFS struct{}

func (localFS) Stat(p string) (fs.FileInfo, error) { return os.Stat(p) }

func (localFS) Open(p string) (io.ReadCloser, error) { return os.Open(p) }

func (localFS) ReadDir(p string) ([]fs.FileInfo, error) {
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	infos := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := os.Stat(path.Join(p, e.Name()))
		if err != nil {
			return nil, err
		}
		infos = append(infos, fi)
	}
	return infos, nil
}

// hdfsFS serves hdfs: URLs through a colinmarc/hdfs client, whose
// FileInfo.ModTime keeps the namenode's milliseconds.
type hdfsFS struct{ c *hdfs.Client }

func (h hdfsFS) Stat(p string) (fs.FileInfo, error) { return h.c.Stat(p) }

func (h hdfsFS) Open(p string) (io.ReadCloser, error) { return h.c.Open(p) }

func (h hdfsFS) ReadDir(p string) ([]fs.FileInfo, error) { return h.c.ReadDir(p) }

func (h hdfsFS) Close() error { return h.c.Close() }

// dialHDFS is the default Options.HDFS: SIMPLE authentication as user, or
// as the user running us when none is given, as Hadoop's clients do.
func dialHDFS(_ context.Context, namenode, userName string) (FileSystem, error) {
	if userName == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("hdfs user: %w", err)
		}
		userName = u.Username
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{namenode}, User: userName})
	if err != nil {
		return nil, err
	}
	return hdfsFS{c}, nil
}
