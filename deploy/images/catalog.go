package images

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// The images the local cluster runs. Their names are what the kubelet's
// containerd config (sandbox image), Weft's manifests and tests refer to.
const (
	PauseRef       = "weft.local/pause:3.10"
	BusyboxRef     = "weft.local/busybox:1"
	NodeRuntimeRef = "weft.local/node-runtime:1"
	WeftRef        = "weft.local/weft:dev"
	// CoreDNSRef is the kind-style cluster's DNS (test/kube/coredns).
	CoreDNSRef = "weft.local/coredns:1.11.3"
)

// BuildStatic builds a Go main package as a static binary into dir and
// returns its path.
func BuildStatic(dir, pkg, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// Pause is the pod sandbox image: one static binary.
func Pause(bin string) Image {
	return Image{
		Ref:        PauseRef,
		Entries:    []Entry{{Path: "/pause", Mode: 0o755, Source: bin}},
		Entrypoint: []string{"/pause"},
	}
}

// CoreDNS is the cluster DNS image: one static CoreDNS binary, started as
// kind's and kubeadm's coredns Deployment starts it (-conf names the
// Corefile its ConfigMap mounts).
func CoreDNS(bin string) Image {
	return Image{
		Ref:        CoreDNSRef,
		Entries:    append(baseEntries(), Entry{Path: "/coredns", Mode: 0o755, Source: bin}),
		Entrypoint: []string{"/coredns"},
	}
}

// busyboxApplets are the commands tests' pods use.
var busyboxApplets = []string{"sh", "echo", "cat", "sleep", "ls", "hostname", "env", "id", "true", "false", "wget", "grep", "head", "tail", "test", "mkdir", "rm", "touch", "nslookup"}

// Busybox is a small general workload image from Debian's busybox-static.
func Busybox(busybox string) Image {
	entries := append(baseEntries(), Entry{Path: "/bin/busybox", Mode: 0o755, Source: busybox})
	for _, a := range busyboxApplets {
		entries = append(entries, Entry{Path: "/bin/" + a, Link: "busybox"})
	}
	return Image{Ref: BusyboxRef, Entries: entries, Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}
}

// NodeRuntime is the image of YARN containers in the local cluster: like a
// NodeManager's containers, they run the node's own software, so the image
// holds only a root layout whose /usr a pod mounts from the host (Debian's
// merged /usr: bin, sbin and lib are links into it). Java and Hadoop thus
// come from the node, as they do under YARN; production profiles name a
// real image instead.
func NodeRuntime() Image {
	entries := append(baseEntries(),
		Entry{Path: "/usr", Mode: 0o755},
		Entry{Path: "/bin", Link: "usr/bin"},
		Entry{Path: "/sbin", Link: "usr/sbin"},
		Entry{Path: "/lib", Link: "usr/lib"},
		Entry{Path: "/lib64", Link: "usr/lib64"},
	)
	return Image{Ref: NodeRuntimeRef, Entries: entries, Cmd: []string{"/bin/sh"},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
}

// WeftCommands are the binaries of Weft's image, under ./cmd.
var WeftCommands = []string{"weft-rm", "weft-nodeplugin", "weft-localizer", "weft-tide"}

// BuildWeft builds WeftCommands static into dir and returns Weft's image
// of them; the image's entries read the binaries from dir.
func BuildWeft(dir string) (Image, error) {
	bins := map[string]string{}
	for _, cmd := range WeftCommands {
		b, err := BuildStatic(dir, "github.com/weft-sh/weft/cmd/"+cmd, cmd)
		if err != nil {
			return Image{}, err
		}
		bins[filepath.Base(b)] = b
	}
	return Weft(bins), nil
}

// Weft holds Weft's binaries (static) under /usr/local/bin.
func Weft(bins map[string]string) Image {
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := baseEntries()
	for _, n := range names {
		entries = append(entries, Entry{Path: "/usr/local/bin/" + n, Mode: 0o755, Source: bins[n]})
	}
	return Image{Ref: WeftRef, Entries: entries, Env: []string{"PATH=/usr/local/bin"}}
}

// baseEntries are what every image but pause has: a writable /tmp and the
// users Weft's pods run as.
func baseEntries() []Entry {
	return []Entry{
		{Path: "/tmp", Mode: 0o1777},
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Content: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
}
