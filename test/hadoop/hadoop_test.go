package hadoop

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCommandJVMProfile(t *testing.T) {
	tests := []struct {
		name    string
		dist    Dist
		want    []string // in this order
		notWant []string // prefixes
	}{
		{name: "tests: small serial C1 JVMs", dist: Dist{},
			want: []string{"-Djava.net.preferIPv4Stack=true", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}},
		{name: "daemon: the JVM's own heap, GC and JIT", dist: Dist{JVM: DaemonJVM},
			want:    []string{"-Djava.net.preferIPv4Stack=true", "--add-opens=java.base/java.lang=ALL-UNNAMED"},
			notWant: []string{"-Xmx", "-XX:"}},
		{name: "JVMArgs after the profile's, so they win", dist: Dist{JVMArgs: []string{"-Xmx1g"}},
			want: []string{"-Xmx512m", "-Xmx1g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.dist.Classpath = "/cp.jar"
			args := tt.dist.Command(context.Background(), "/conf", "u", "Main").Args
			main := slices.Index(args, "Main")
			if main < 0 || args[main-1] != "/conf"+string(os.PathListSeparator)+"/cp.jar" {
				t.Fatalf("args %q: want -cp conf:classpath Main", args)
			}
			flags := args[1 : main-2]
			last := -1
			for _, w := range tt.want {
				i := slices.Index(flags, w)
				if i < 0 {
					t.Fatalf("flags %q: want %s", flags, w)
				}
				if i < last {
					t.Errorf("flags %q: want %s after the flags before it", flags, w)
				}
				last = i
			}
			for _, f := range flags {
				for _, nw := range tt.notWant {
					if strings.HasPrefix(f, nw) {
						t.Errorf("flags %q: want nothing starting %s", flags, nw)
					}
				}
			}
		})
	}
}

func TestWriteRMDaemonConf(t *testing.T) {
	dir := t.TempDir()
	addrs := RMDaemonAddrs{RMAddrs: RMAddrs{Client: "127.0.0.1:1", Scheduler: "127.0.0.1:2", Web: "127.0.0.1:3"},
		ResourceTracker: "127.0.0.1:4", Admin: "127.0.0.1:5"}
	if err := WriteRMDaemonConf(dir, addrs, "/scratch"); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prop := func(k, v string) string { return "<name>" + k + "</name><value>" + v + "</value>" }
	for file, want := range map[string][]string{
		"yarn-site.xml": {prop("yarn.resourcemanager.address", "127.0.0.1:1"), prop("yarn.resourcemanager.scheduler.address", "127.0.0.1:2"),
			prop("yarn.resourcemanager.webapp.address", "127.0.0.1:3"), prop("yarn.resourcemanager.resource-tracker.address", "127.0.0.1:4"),
			prop("yarn.resourcemanager.admin.address", "127.0.0.1:5")},
		"core-site.xml":          {prop("hadoop.tmp.dir", "/scratch"), prop("hadoop.security.authentication", "simple")},
		"capacity-scheduler.xml": {prop("yarn.scheduler.capacity.root.queues", "default"), prop("yarn.scheduler.capacity.root.default.capacity", "100")},
		"log4j.properties":       {"log4j.rootLogger="},
	} {
		got := read(file)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %s:\n%s", file, w, got)
			}
		}
	}
	// A daemon's configuration is not a client's: no NodeManager setting.
	if got := read("yarn-site.xml"); strings.Contains(got, "yarn.nodemanager.") {
		t.Errorf("yarn-site.xml sets a NodeManager property:\n%s", got)
	}
}
