package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-sh/weft/translator/wellknown"
)

// vocabulary is what the module's non-test Go files do with the words of
// translator/wellknown: which of its names each package uses, the string
// constants each protos package declares, the string literals that spell
// a word, and the names wellknown declares.
type vocabulary struct {
	// uses maps a package to the wellknown names it selects
	// (wellknown.LabelTier).
	uses map[string]map[string]bool
	// consts maps a package to the values of its string constants.
	consts map[string]map[string]bool
	// literals are the string literals outside wellknown that spell a word.
	literals []literal
	// declared are wellknown's exported top-level names; words, its
	// exported constants that hold a word, not a value of one (a
	// TideState, a Kind).
	declared, words map[string]bool
}

type literal struct {
	pkg, pos, value string
}

// wellknownPkg is the vocabulary's package, relative to the module.
const wellknownPkg = "translator/wellknown"

// spells reports whether a string literal's value spells a word (or what
// looks like one): Weft's label and annotation prefix, or the start of a
// registered word.
func spells(v string, words []wellknown.Word) bool {
	return strings.HasPrefix(v, "weft.io/") ||
		slices.ContainsFunc(words, func(w wellknown.Word) bool { return strings.HasPrefix(v, w.Value) })
}

// readVocabulary parses every non-test Go file of the module at root.
func readVocabulary(root, module string, words []wellknown.Word) (*vocabulary, error) {
	v := &vocabulary{uses: map[string]map[string]bool{}, consts: map[string]map[string]bool{},
		declared: map[string]bool{}, words: map[string]bool{}}
	fset := token.NewFileSet()
	err := eachSource(root, func(pkg, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if pkg == wellknownPkg {
			v.declare(f)
			return nil
		}
		local := importedAs(f, module+"/"+wellknownPkg)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && local != "" && x.Name == local {
					if v.uses[pkg] == nil {
						v.uses[pkg] = map[string]bool{}
					}
					v.uses[pkg][n.Sel.Name] = true
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && spells(s, words) {
					v.literals = append(v.literals, literal{pkg: pkg, pos: fset.Position(n.Pos()).String(), value: s})
				}
			case *ast.GenDecl:
				if n.Tok == token.CONST {
					for _, spec := range n.Specs {
						for _, val := range spec.(*ast.ValueSpec).Values {
							if lit, ok := val.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								s, _ := strconv.Unquote(lit.Value)
								if v.consts[pkg] == nil {
									v.consts[pkg] = map[string]bool{}
								}
								v.consts[pkg][s] = true
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	return v, err
}

// declare records the names a file of wellknown declares.
func (v *vocabulary) declare(f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil && decl.Name.IsExported() {
				v.declared[decl.Name.Name] = true
			}
		case *ast.GenDecl:
			var typ ast.Expr // a constant without a type repeats the one above
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					if spec.Name.IsExported() {
						v.declared[spec.Name.Name] = true
					}
				case *ast.ValueSpec:
					if spec.Type != nil || len(spec.Values) > 0 {
						typ = spec.Type
					}
					for _, name := range spec.Names {
						if !name.IsExported() {
							continue
						}
						v.declared[name.Name] = true
						if id, ok := typ.(*ast.Ident); decl.Tok == token.CONST && !(ok && (id.Name == "TideState" || id.Name == "Kind")) {
							v.words[name.Name] = true
						}
					}
				}
			}
		}
	}
}

// checkVocabulary checks words against what the module's code does with
// them: every package that uses a word (its constant or one of its
// accessors) is one of its declared writers or readers, and every declared
// writer or reader uses it, or, below translator, holds it as a constant
// of its own. Every constant of wellknown that holds a word is in the
// table, and no Go file outside wellknown spells a word as a literal of
// its own, but for those copies. The test harness (test/...) is left out
// of the first rule: it stands in for every process at once.
func checkVocabulary(v *vocabulary, words []wellknown.Word, module string) []string {
	var errs []string
	short := func(p string) string { return strings.TrimPrefix(p, module+"/") }
	inTable := map[string]bool{}
	copies := map[string]map[string]bool{} // package → word values it may hold
	for _, w := range words {
		names := append([]string{w.Name}, w.Accessors...)
		for _, name := range names {
			inTable[name] = true
			if !v.declared[name] {
				errs = append(errs, fmt.Sprintf("%s: wellknown declares no %s", w.Name, name))
			}
		}
		declared := map[string]bool{}
		for _, p := range slices.Concat(w.Writers, w.Readers) {
			declared[short(p)] = true
		}
		for pkg, used := range v.uses {
			if strings.HasPrefix(pkg, "test/") || declared[pkg] {
				continue
			}
			for _, name := range names {
				if used[name] {
					errs = append(errs, fmt.Sprintf("%s (%s): %s uses wellknown.%s but is neither a writer nor a reader of it", w.Name, w.Value, pkg, name))
					break
				}
			}
		}
		for pkg := range declared {
			if pkg == "protos" || strings.HasPrefix(pkg, "protos/") {
				if !v.consts[pkg][w.Value] {
					errs = append(errs, fmt.Sprintf("%s (%s): %s is a writer or reader of it but declares no constant %q", w.Name, w.Value, pkg, w.Value))
				}
				if copies[pkg] == nil {
					copies[pkg] = map[string]bool{}
				}
				copies[pkg][w.Value] = true
				continue
			}
			if !slices.ContainsFunc(names, func(name string) bool { return v.uses[pkg][name] }) {
				errs = append(errs, fmt.Sprintf("%s (%s): %s is a writer or reader of it but uses none of wellknown.%s", w.Name, w.Value, pkg, strings.Join(names, ", wellknown.")))
			}
		}
	}
	for name := range v.words {
		if !inTable[name] {
			errs = append(errs, fmt.Sprintf("wellknown.%s holds a word that Words does not list", name))
		}
	}
	for _, l := range v.literals {
		if !copies[l.pkg][l.value] {
			errs = append(errs, fmt.Sprintf("%s: %q spells a word: use translator/wellknown's constant", l.pos, l.value))
		}
	}
	slices.Sort(errs)
	return errs
}

// TestVocabulary checks translator/wellknown's table of words against the
// module's code (checkVocabulary).
func TestVocabulary(t *testing.T) {
	g := realGraph(t)
	words := wellknown.Words()
	v, err := readVocabulary(g.Root, g.Module, words)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		for _, p := range slices.Concat(w.Writers, w.Readers) {
			if g.Packages[p] == nil {
				t.Errorf("%s: %s is not a package of the module", w.Name, p)
			}
		}
	}
	for _, e := range checkVocabulary(v, words, g.Module) {
		t.Error(e)
	}
	t.Logf("%d words over %d packages that use them", len(words), len(v.uses))
}

// TestVocabularyCatches checks that checkVocabulary reports a stray use, a
// declared user that uses nothing, a word missing from the table and a
// word spelled out.
func TestVocabularyCatches(t *testing.T) {
	const module = "m"
	words := []wellknown.Word{
		{Name: "LabelTier", Value: "weft.io/tier", Writers: []string{"m/translator"}, Readers: []string{"m/rmfacade/allocator"}, Accessors: []string{"TierOf"}},
		{Name: "AllocationTagTier", Value: "weft.io/tier=", Writers: []string{"m/protos/yarn/nmtokens"}},
	}
	clean := func() *vocabulary {
		return &vocabulary{
			uses: map[string]map[string]bool{
				"translator":         {"LabelTier": true},
				"rmfacade/allocator": {"TierOf": true},
				"test/e2e":           {"LabelTier": true},
			},
			consts:   map[string]map[string]bool{"protos/yarn/nmtokens": {"weft.io/tier=": true}},
			literals: []literal{{pkg: "protos/yarn/nmtokens", pos: "nmtokens.go:1", value: "weft.io/tier="}},
			declared: map[string]bool{"LabelTier": true, "TierOf": true, "AllocationTagTier": true},
			words:    map[string]bool{"LabelTier": true, "AllocationTagTier": true},
		}
	}
	if errs := checkVocabulary(clean(), words, module); len(errs) > 0 {
		t.Fatalf("clean: %q", errs)
	}
	cases := []struct {
		name  string
		spoil func(v *vocabulary)
		want  string
	}{
		{"a package that is no writer or reader", func(v *vocabulary) { v.uses["bigdataplugin/janitor"] = map[string]bool{"LabelTier": true} },
			"bigdataplugin/janitor uses wellknown.LabelTier but is neither"},
		{"through an accessor", func(v *vocabulary) { v.uses["scheduler/tide"] = map[string]bool{"TierOf": true} },
			"scheduler/tide uses wellknown.TierOf but is neither"},
		{"a declared reader that reads nothing", func(v *vocabulary) { delete(v.uses, "rmfacade/allocator") },
			"rmfacade/allocator is a writer or reader of it but uses none"},
		{"a copy below translator gone", func(v *vocabulary) { delete(v.consts, "protos/yarn/nmtokens") },
			"protos/yarn/nmtokens is a writer or reader of it but declares no constant"},
		{"a word not in the table", func(v *vocabulary) { v.declared["LabelPool"], v.words["LabelPool"] = true, true },
			"wellknown.LabelPool holds a word that Words does not list"},
		{"an accessor wellknown lacks", func(v *vocabulary) { delete(v.declared, "TierOf") }, "wellknown declares no TierOf"},
		{"a word spelled out", func(v *vocabulary) {
			v.literals = append(v.literals, literal{pkg: "cmd/weft-demo", pos: "main.go:3", value: "weft.io/tier"})
		}, `main.go:3: "weft.io/tier" spells a word`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := clean()
			c.spoil(v)
			errs := checkVocabulary(v, words, module)
			if len(errs) != 1 || !strings.Contains(errs[0], c.want) {
				t.Errorf("got %q, want one error with %q", errs, c.want)
			}
		})
	}
}

// eachSource calls fn with each non-test Go file of the module at root
// and its package, relative to the module.
func eachSource(root string, fn func(pkg, path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		return fn(filepath.ToSlash(rel), path)
	})
}

// importedAs returns the name a file refers to an imported package by
// (its last path element unless renamed), "" when it does not import it.
func importedAs(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}
