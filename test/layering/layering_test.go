package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// realGraph loads the module's import graph once for the tests that read it.
var realGraph = func() func(t *testing.T) *Graph {
	load := sync.OnceValues(func() (*Graph, error) { return Load(".") })
	return func(t *testing.T) *Graph {
		t.Helper()
		g, err := load()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}()

// TestRulesHold checks the module's real import graph against Rules.
func TestRulesHold(t *testing.T) {
	g := realGraph(t)
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

// withImport returns g with one more arrow, from → to, as an import of
// from's own files (what to links joins from's Deps) or of its tests; g
// itself is left as it was.
func withImport(g *Graph, from, to string, test bool) *Graph {
	out := &Graph{Module: g.Module, Root: g.Root, Packages: make(map[string]*Package, len(g.Packages))}
	for name, p := range g.Packages {
		out.Packages[name] = p
	}
	p := *g.Packages[from]
	if test {
		p.TestImports = append(slices.Clone(p.TestImports), to)
	} else {
		p.Imports = append(slices.Clone(p.Imports), to)
		p.Deps = slices.Concat(p.Deps, []string{to}, g.Packages[to].Deps)
	}
	out.Packages[from] = &p
	return out
}

// TestRulesCatch adds one forbidden arrow at a time to the module's real
// graph and checks that the rule it breaks reports it (the arrow on the
// violation's chain, for a rule about what is linked), and that each
// rule's exceptions let their arrow through: a rule whose patterns no
// longer match the rooms would pass TestRulesHold forever. Every rule of
// Rules has a case that breaks it.
func TestRulesCatch(t *testing.T) {
	g := realGraph(t)
	const (
		k8s     = "k8s.io/api/core/v1"
		bbolt   = "go.etcd.io/bbolt"
		dynamic = "k8s.io/client-go/dynamic"
	)
	cases := []struct {
		rule, from, to string
		test           bool // the arrow is a test's import
		allowed        bool // an exception of the rule: it must not fire
	}{
		{rule: "protos is the vocabulary", from: "protos/ipc", to: "rmfacade/state"},
		{rule: "protos is the vocabulary", from: "protos/yarn/records", to: "translator"},
		{rule: "protos links no Kubernetes", from: "protos/yarn/records", to: k8s},
		{rule: "protos links no Kubernetes", from: "protos/cowtable", to: dynamic},
		{rule: "protos links no store", from: "protos/yarn/nmtokens", to: bbolt},
		{rule: "protos links no store", from: "protos/cowtable", to: bbolt},
		{rule: "nothing imports a command", from: "rmfacade/server", to: "cmd/weft-rm"},
		{rule: "nothing imports a command", from: "scheduler", to: "cmd/weft-sim", test: true},
		{rule: "nothing imports the test harness", from: "rmfacade/amrm", to: "test/kube"},
		{rule: "nothing imports the test harness", from: "quota", to: "test/hadoop", test: true},
		{rule: "nothing imports the test harness", from: "cmd/weft-rm", to: "test/kube"},
		{rule: "nothing imports the test harness", from: "cmd/weft-demo", to: "test/kube", allowed: true},
		{rule: "the scheduler's core links no Kubernetes", from: "scheduler/objects", to: k8s},
		{rule: "the scheduler's core links no Kubernetes", from: "scheduler/state", to: "quota/crd"},
		{rule: "the scheduler's core links no Kubernetes", from: "scheduler/podbinder", to: dynamic, allowed: true},
		{rule: "quota's arithmetic links no Kubernetes", from: "quota", to: k8s},
		{rule: "quota's arithmetic links no Kubernetes", from: "quota/crd", to: dynamic, allowed: true},
		{rule: "quota imports no room but protos", from: "quota", to: "scheduler/objects"},
		{rule: "quota imports no room but protos", from: "quota/crd", to: "translator"},
		{rule: "translator imports no room but protos", from: "translator", to: "rmfacade/state"},
		{rule: "translator imports no room but protos", from: "translator/masterkey", to: "quota"},
		{rule: "the scheduler reaches no facade", from: "scheduler/state", to: "rmfacade/rm"},
		{rule: "the scheduler reaches no facade", from: "scheduler/tide", to: "bigdataplugin/colocation"},
		{rule: "only weft-sim runs the simulator", from: "cmd/weft-rm", to: "scheduler/sim"},
		{rule: "only weft-sim runs the simulator", from: "scheduler", to: "scheduler/sim", test: true},
		{rule: "only weft-sim runs the simulator", from: "test/bench/groundtruth", to: "scheduler/sim", allowed: true},
		{rule: "the node plugin links nothing of the RM", from: "bigdataplugin/shuffle", to: "rmfacade/state"},
		{rule: "the node plugin links nothing of the RM", from: "cmd/weft-nodeplugin", to: bbolt},
		{rule: "the node plugin links nothing of the RM", from: "bigdataplugin/nodemanager", to: "protos/cowtable"},
		{rule: "the RM imports nothing of the node plugin", from: "rmfacade/amrm", to: "bigdataplugin/nodemanager"},
		{rule: "the RM's store reaches no scheduler", from: "rmfacade/state/kubestore", to: "scheduler/objects"},
		{rule: "the RM's store reaches no scheduler", from: "rmfacade/state", to: "quota", allowed: true},
		{rule: "the node plugin reaches no scheduler", from: "bigdataplugin/colocation", to: "quota"},
	}
	full := func(p string) string {
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			return p
		}
		return g.Module + "/" + p
	}
	broken := map[string]bool{}
	for _, c := range cases {
		name := c.rule + ": " + c.from + " → " + c.to
		t.Run(name, func(t *testing.T) {
			i := slices.IndexFunc(Rules, func(r Rule) bool { return r.Name == c.rule })
			if i < 0 {
				t.Fatalf("no rule named %q", c.rule)
			}
			from, to := full(c.from), full(c.to)
			if g.Packages[from] == nil || g.Packages[to] == nil {
				t.Fatalf("%s or %s is not in the module's graph: move the case with the rooms", from, to)
			}
			fired := false
			for _, v := range withImport(g, from, to, c.test).Check(Rules[i : i+1]) {
				fired = fired || (v.From == from && slices.Contains(v.Path, to))
			}
			if fired == c.allowed {
				t.Errorf("rule %q reported %s → %s: %v, want %v", c.rule, c.from, c.to, fired, !c.allowed)
			}
		})
		if !c.allowed {
			broken[c.rule] = true
		}
	}
	for _, r := range Rules {
		if !broken[r.Name] {
			t.Errorf("rule %q has no case that breaks it", r.Name)
		}
	}
}
