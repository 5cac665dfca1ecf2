package cgroups_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

func TestDetect(t *testing.T) {
	cases := []struct {
		name    string
		layout  func(t *testing.T, root string)
		want    cgroups.Version
		wantErr string
	}{
		{name: "v1", layout: func(t *testing.T, root string) { cgroupstest.V1(t, root) }, want: cgroups.V1},
		{name: "v1 with cpu,cpuacct and links", layout: func(t *testing.T, root string) { cgroupstest.V1Combined(t, root) }, want: cgroups.V1},
		{name: "v2", layout: func(t *testing.T, root string) { cgroupstest.V2(t, root) }, want: cgroups.V2},
		{
			name: "v1 with cpu,cpuacct and no links",
			layout: func(t *testing.T, root string) {
				mkdirs(t, root, "cpu,cpuacct", "memory", "cpuset")
			},
			want: cgroups.V1,
		},
		{
			name: "hybrid: v1 controllers, empty v2 tree at unified",
			layout: func(t *testing.T, root string) {
				cgroupstest.V1(t, root)
				mkdirs(t, root, "unified", "systemd")
				writeFile(t, filepath.Join(root, "unified", "cgroup.controllers"), "\n")
			},
			want: cgroups.V1,
		},
		{name: "empty", layout: func(*testing.T, string) {}, wantErr: "no cpu, cpuacct, memory hierarchy"},
		{
			name:    "memory only",
			layout:  func(t *testing.T, root string) { mkdirs(t, root, "memory") },
			wantErr: "no cpu, cpuacct hierarchy",
		},
		{
			name: "cpu is a file, not a hierarchy",
			layout: func(t *testing.T, root string) {
				mkdirs(t, root, "cpuacct", "memory")
				writeFile(t, filepath.Join(root, "cpu"), "")
			},
			wantErr: "no cpu hierarchy",
		},
		{
			name: "dangling link",
			layout: func(t *testing.T, root string) {
				mkdirs(t, root, "cpuacct", "memory")
				if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "no cpu hierarchy",
		},
		{
			name:    "no such root",
			layout:  func(t *testing.T, root string) { os.Remove(root) },
			wantErr: "no such file",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.layout(t, root)
			got, err := cgroups.Detect(root)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Detect() = %v, %v; want error containing %q", got, err, c.wantErr)
				}
				if _, err := cgroups.Open(root, cgroups.Cgroupfs); err == nil {
					t.Error("Open() succeeded on a layout Detect refuses")
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Detect() = %v, %v; want %v", got, err, c.want)
			}
			f, err := cgroups.Open(root, cgroups.Systemd)
			if err != nil {
				t.Fatal(err)
			}
			if f.Version() != c.want || f.Driver() != cgroups.Systemd || f.Root() != root {
				t.Errorf("Open() = %v %v %s, want %v systemd %s", f.Version(), f.Driver(), f.Root(), c.want, root)
			}
		})
	}
}

func TestNewChecksLayoutAndArguments(t *testing.T) {
	v1, v2 := t.TempDir(), t.TempDir()
	cgroupstest.V1(t, v1)
	cgroupstest.V2(t, v2)
	cases := []struct {
		name    string
		root    string
		v       cgroups.Version
		d       cgroups.Driver
		wantErr string
	}{
		{name: "v1 tree as v1", root: v1, v: cgroups.V1, d: cgroups.Cgroupfs},
		{name: "v2 tree as v2", root: v2, v: cgroups.V2, d: cgroups.Systemd},
		{name: "v1 tree as v2", root: v1, v: cgroups.V2, d: cgroups.Cgroupfs, wantErr: "not a cgroup v2 root"},
		{name: "v2 tree as v1", root: v2, v: cgroups.V1, d: cgroups.Cgroupfs, wantErr: "neither cgroup v2"},
		{name: "unknown version", root: v1, v: 3, d: cgroups.Cgroupfs, wantErr: "unknown cgroup version Version(3)"},
		{name: "zero version", root: v1, d: cgroups.Cgroupfs, wantErr: "unknown cgroup version"},
		{name: "unknown driver", root: v1, v: cgroups.V1, d: "cgroupsfs", wantErr: `unknown cgroup driver "cgroupsfs"`},
	}
	for _, c := range cases {
		_, err := cgroups.New(c.root, c.v, c.d)
		if c.wantErr == "" && err != nil {
			t.Errorf("%s: New() = %v", c.name, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: New() error = %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
