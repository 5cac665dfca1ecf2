package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRulesHold checks the module's real import graph against Rules.
func TestRulesHold(t *testing.T) {
	g, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for name := range g.Packages {
		if strings.HasPrefix(name, g.Module+"/") {
			own++
		}
	}
	if own < 20 {
		t.Fatalf("go list found %d packages of %s: not the module's graph", own, g.Module)
	}
	if err := statSources(g.Root); err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Check(Rules) {
		t.Error(v)
	}
	t.Logf("%d rules over %d packages of %s (%d with what they link)", len(Rules), own, g.Module, len(g.Packages))
}

// statSources stats every Go file and go.mod of the module and lists its
// directories. go test caches a passing result against the files a test
// opens or stats; the graph comes from another process, so without this
// an import added since would not rerun the test.
func statSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || path == filepath.Join(root, "go.mod")) {
			_, err = os.Stat(path)
		}
		return err
	})
}

// graph builds a synthetic graph of module m from direct imports,
// computing each package's Deps as the go command does.
func graph(imports map[string][]string, tests map[string][]string) *Graph {
	g := &Graph{Module: "m", Packages: map[string]*Package{}}
	for name, imps := range imports {
		g.Packages[name] = &Package{ImportPath: name, Imports: imps, TestImports: tests[name]}
	}
	for _, p := range g.Packages {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(n string) {
			for _, d := range imports[n] {
				if !seen[d] {
					seen[d] = true
					walk(d)
				}
			}
		}
		walk(p.ImportPath)
		for d := range seen {
			p.Deps = append(p.Deps, d)
		}
		slices.Sort(p.Deps)
	}
	return g
}

func TestCheck(t *testing.T) {
	imports := map[string][]string{
		"m/cmd/run":           {"m/core", "m/node", "fmt"},
		"m/core":              {"m/vocab", "fmt"},
		"m/core/sub":          {"m/core", "m/vocab/kube"},
		"m/node":              {"m/vocab", "m/core/sub"},
		"m/vocab":             {"fmt"},
		"m/vocab/kube":        {"k8s.io/api"},
		"m/test/harness":      {"m/core"},
		"k8s.io/api":          {"k8s.io/apimachinery"},
		"k8s.io/apimachinery": nil,
		"fmt":                 nil,
	}
	tests := map[string][]string{"m/core": {"m/test/harness", "testing"}}
	cases := []struct {
		name string
		rule Rule
		want []string // "from → to: path"
	}{
		{
			name: "direct import forbidden",
			rule: Rule{From: []string{"vocab/..."}, Forbid: []string{"core/..."}},
			want: nil,
		},
		{
			name: "direct import found, below the pattern's base too",
			rule: Rule{From: []string{"node"}, Forbid: []string{"core/..."}},
			want: []string{"m/node → m/core/sub: m/node → m/core/sub"},
		},
		{
			name: "exact pattern leaves what lies below it",
			rule: Rule{From: []string{"node"}, Forbid: []string{"core"}},
			want: nil,
		},
		{
			name: "a direct rule does not see what is linked",
			rule: Rule{From: []string{"node"}, Forbid: []string{"k8s.io/..."}},
			want: nil,
		},
		{
			name: "a linked rule sees it, with the chain",
			rule: Rule{From: []string{"node"}, Forbid: []string{"k8s.io/..."}, Linked: true},
			want: []string{"m/node → k8s.io/api: m/node → m/core/sub → m/vocab/kube → k8s.io/api"},
		},
		{
			name: "a linked rule names each way in",
			rule: Rule{From: []string{"cmd/run"}, Forbid: []string{"k8s.io/...", "core/sub"}, Linked: true},
			want: []string{
				"m/cmd/run → k8s.io/api: m/cmd/run → m/node → m/core/sub → m/vocab/kube → k8s.io/api",
				"m/cmd/run → m/core/sub: m/cmd/run → m/node → m/core/sub",
			},
		},
		{
			name: "allow takes part of the forbidden back",
			rule: Rule{From: []string{"node"}, Forbid: []string{"..."}, Allow: []string{"vocab/..."}, Linked: true},
			want: []string{"m/node → m/core/sub: m/node → m/core/sub"},
		},
		{
			name: "except takes part of the bound back",
			rule: Rule{From: []string{"..."}, Except: []string{"cmd/...", "core/..."}, Forbid: []string{"core/..."}},
			want: []string{"m/node → m/core/sub: m/node → m/core/sub", "m/test/harness → m/core: m/test/harness → m/core"},
		},
		{
			name: "test imports count only where asked",
			rule: Rule{From: []string{"core"}, Forbid: []string{"test/..."}},
			want: nil,
		},
		{
			name: "test imports counted",
			rule: Rule{From: []string{"core"}, Forbid: []string{"test/..."}, Tests: true},
			want: []string{"m/core → m/test/harness: m/core → m/test/harness"},
		},
		{
			name: "dependencies are never bound",
			rule: Rule{From: []string{"k8s.io/..."}, Forbid: []string{"k8s.io/..."}},
			want: []string{"k8s.io/... → (nothing): the rule binds no package: rename its patterns with the rooms"},
		},
		{
			name: "a rule binding nothing fails",
			rule: Rule{From: []string{"gone/..."}, Forbid: []string{"core"}},
			want: []string{"gone/... → (nothing): the rule binds no package: rename its patterns with the rooms"},
		},
	}
	g := graph(imports, tests)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, v := range g.Check([]Rule{c.rule}) {
				got = append(got, v.From+" → "+v.To+": "+strings.Join(v.Path, " → "))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, pkg string
		want         bool
	}{
		{"scheduler", "m/scheduler", true},
		{"scheduler", "m/scheduler/state", false},
		{"scheduler/...", "m/scheduler", true},
		{"scheduler/...", "m/scheduler/state", true},
		{"scheduler/...", "m/schedulerx", false},
		{"...", "m/anything/below", true},
		{"...", "other/pkg", false},
		{"k8s.io/...", "k8s.io/api/core/v1", true},
		{"k8s.io/...", "m/k8s.io", false},
		{"go.etcd.io/bbolt", "go.etcd.io/bbolt", true},
	}
	for _, c := range cases {
		if got := Match("m", c.pattern, c.pkg); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.pkg, got, c.want)
		}
	}
}
