package cgroups_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

// layouts are the three ways a host mounts cgroups, each over a fresh
// temporary directory.
var layouts = []struct {
	name string
	make func(cgroupstest.TB, string) *cgroupstest.Tree
}{
	{"v1", cgroupstest.V1},
	{"v1 cpu,cpuacct", cgroupstest.V1Combined},
	{"v2", cgroupstest.V2},
}

// forEachLayout runs fn as a subtest over each layout.
func forEachLayout(t *testing.T, fn func(t *testing.T, tree *cgroupstest.Tree)) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) { fn(t, l.make(t, t.TempDir())) })
	}
}

func v1Tree(t *testing.T) *cgroupstest.Tree { return cgroupstest.V1(t, t.TempDir()) }

// box is the big box's path with the cgroupfs driver.
var box = cgroups.Cgroupfs.QOSPath(corev1.PodQOSBestEffort)

func wantNotExist(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: error = %v, want fs.ErrNotExist", what, err)
	}
}

func wantErrContaining(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not contain %q", what, err, p)
		}
	}
}
