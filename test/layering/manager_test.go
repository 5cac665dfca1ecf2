package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// The RM's records are changed through rmfacade/rm's Manager, but no
// caller needs all of it: each depends on a small interface of the verbs
// YARN gives its kind of caller (amrm.Applications, rm.ClientService,
// the controllers' own), and only the composition root, which builds the
// Manager and hands it out, names the whole type. A package that takes a
// *rm.Manager again makes the Manager a hub once more.

// managerPkg is the Manager's package, relative to the module.
const managerPkg = "rmfacade/rm"

// wholeManagerHolders are the packages allowed to name rm.Manager.
var wholeManagerHolders = []string{"rmfacade/server"}

// namesOfManager returns the places in a file that name
// rm.Manager (in a type, a conversion or a composite), as file:line.
func namesOfManager(fset *token.FileSet, f *ast.File, module string) []string {
	local := importedAs(f, module+"/"+managerPkg)
	if local == "" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Manager" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == local {
				out = append(out, fset.Position(sel.Pos()).String())
			}
		}
		return true
	})
	return out
}

// managerHolders walks the module's non-test Go files and returns where
// a package outside wholeManagerHolders names rm.Manager.
func managerHolders(root, module string) ([]string, error) {
	fset := token.NewFileSet()
	var out []string
	err := eachSource(root, func(pkg, path string) error {
		if slices.Contains(wholeManagerHolders, pkg) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, namesOfManager(fset, f, module)...)
		return nil
	})
	return out, err
}

// TestOnlyTheCompositionRootHoldsTheManager checks that the RM's callers
// depend on small interfaces, not on the whole Manager.
func TestOnlyTheCompositionRootHoldsTheManager(t *testing.T) {
	g := realGraph(t)
	for _, p := range wholeManagerHolders {
		if g.Packages[g.Module+"/"+p] == nil {
			t.Errorf("%s is not a package of the module", p)
		}
	}
	held, err := managerHolders(g.Root, g.Module)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range held {
		t.Errorf("%s: names rm.Manager; depend on an interface of the verbs used instead", at)
	}
}

// TestManagerHoldersCatch checks that namesOfManager finds the Manager
// named under its own name or another, and nothing else.
func TestManagerHoldersCatch(t *testing.T) {
	const module = "m"
	tests := []struct {
		name, src string
		want      int
	}{
		{"a field of the whole type", `package p; import "m/rmfacade/rm"; type S struct{ mgr *rm.Manager }`, 1},
		{"a parameter, under another name", `package p; import x "m/rmfacade/rm"; func New(m *x.Manager) {}`, 1},
		{"an interface of its verbs", `package p; import "m/rmfacade/rm"; type A interface{ Allocate(rm.Allocation) }`, 0},
		{"another package's Manager", `package p; import "m/other/rm"; type S struct{ mgr *rm.Manager }`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tc.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := namesOfManager(fset, f, module); len(got) != tc.want {
				t.Errorf("found %q, want %d", got, tc.want)
			}
		})
	}
}
