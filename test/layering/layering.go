// Package layering holds Weft's import rules and checks a package graph
// against them, in the spirit of Kubernetes' import-boss
// (k8s.io/code-generator/cmd/import-boss): each room of the tree says
// what it may not import, or may not link at all, and why. The graph is
// the one the go command builds (go list -deps -json), so a rule about
// linking sees every transitive import, test-only imports aside.
package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Rule forbids some packages to reach others.
type Rule struct {
	// Name says what the rule keeps, in a few words.
	Name string
	// From lists the packages the rule binds, as patterns (see Match);
	// Except takes some of them out again.
	From, Except []string
	// Forbid lists what they may not reach; Allow takes some of it out.
	Forbid, Allow []string
	// Linked makes the rule about every package linked in (the transitive
	// closure of imports) rather than the direct imports alone, for rules
	// about what a binary carries, such as a client library.
	Linked bool
	// Tests extends a direct rule to the imports of the package's tests:
	// a unit test reaching a test harness or a command costs the unit
	// step what the harness costs.
	Tests bool
	// Why is the reason, printed with each violation.
	Why string
}

// Package is one node of the import graph.
type Package struct {
	ImportPath string
	// Imports are the direct imports of the package's own files; Deps
	// the transitive closure of them. TestImports and XTestImports are
	// the direct imports of its in-package and external tests.
	Imports, Deps, TestImports, XTestImports []string
}

// Graph is an import graph: the module's packages and whatever they link.
type Graph struct {
	// Module is the module path; patterns without a dot in their first
	// element are relative to it.
	Module string
	// Root is the module's directory (Load's graph only).
	Root     string
	Packages map[string]*Package
}

// Violation is one forbidden arrow.
type Violation struct {
	Rule *Rule
	// From is the bound package, To the forbidden one; Path the chain of
	// imports from one to the other (From and To included).
	From, To string
	Path     []string
	module   string
}

// String names the packages relative to the module.
func (v Violation) String() string {
	short := func(p string) string { return strings.TrimPrefix(p, v.module+"/") }
	path := make([]string, len(v.Path))
	for i, p := range v.Path {
		path[i] = short(p)
	}
	return fmt.Sprintf("%s: %s reaches %s (%s) — %s", v.Rule.Name, short(v.From), short(v.To), strings.Join(path, " → "), v.Rule.Why)
}

// Match reports whether pkg matches pattern. A pattern is an import path,
// relative to module unless its first element holds a dot (k8s.io/...);
// a trailing "/..." matches the path and everything below it, as the go
// command's patterns do, and "..." alone the whole module.
func Match(module, pattern, pkg string) bool {
	if first, _, _ := strings.Cut(pattern, "/"); first == "..." || !strings.Contains(first, ".") {
		pattern = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func (g *Graph) matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return Match(g.Module, p, pkg) })
}

// Check returns every violation of rules in g, ordered by rule, then by
// package. A rule binding no package of g is a violation of its own: a
// rule whose room was renamed would otherwise pass forever.
func (g *Graph) Check(rules []Rule) []Violation {
	var out []Violation
	names := make([]string, 0, len(g.Packages))
	for name := range g.Packages {
		names = append(names, name)
	}
	slices.Sort(names)
	for i := range rules {
		r := &rules[i]
		bound := 0
		for _, name := range names {
			if !strings.HasPrefix(name, g.Module+"/") && name != g.Module {
				continue // a dependency, not the module's own
			}
			if !g.matchAny(r.From, name) || g.matchAny(r.Except, name) {
				continue
			}
			bound++
			p := g.Packages[name]
			reach := p.Imports
			if r.Linked {
				reach = g.entries(r, p)
			} else if r.Tests {
				reach = slices.Concat(p.Imports, p.TestImports, p.XTestImports)
			}
			seen := map[string]bool{}
			for _, to := range reach {
				if seen[to] || to == name || !g.forbidden(r, to) {
					continue
				}
				seen[to] = true
				path := []string{name, to}
				if r.Linked {
					path = g.path(name, to)
				}
				out = append(out, Violation{Rule: r, From: name, To: to, Path: path, module: g.Module})
			}
		}
		if bound == 0 {
			out = append(out, Violation{Rule: r, From: strings.Join(r.From, ","), To: "(nothing)",
				Path: []string{"the rule binds no package: rename its patterns with the rooms"}, module: g.Module})
		}
	}
	return out
}

func (g *Graph) forbidden(r *Rule, pkg string) bool {
	return g.matchAny(r.Forbid, pkg) && !g.matchAny(r.Allow, pkg)
}

// entries returns the forbidden packages p links through an allowed one
// (p itself included): where the forbidden part of its closure begins.
// What they import in turn says nothing more, and would bury the arrow
// to cut under a hundred lines.
func (g *Graph) entries(r *Rule, p *Package) []string {
	var out []string
	for _, via := range append([]string{p.ImportPath}, p.Deps...) {
		if (via != p.ImportPath && g.forbidden(r, via)) || g.Packages[via] == nil {
			continue
		}
		for _, to := range g.Packages[via].Imports {
			if g.forbidden(r, to) && !slices.Contains(out, to) {
				out = append(out, to)
			}
		}
	}
	slices.Sort(out)
	return out
}

// path finds a shortest chain of imports from one package to another.
func (g *Graph) path(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for ; cur != ""; cur = prev[cur] {
				chain = append(chain, cur)
			}
			slices.Reverse(chain)
			return chain
		}
		if p := g.Packages[cur]; p != nil {
			for _, next := range p.Imports {
				if _, ok := prev[next]; !ok {
					prev[next] = cur
					queue = append(queue, next)
				}
			}
		}
	}
	return []string{from, "…", to}
}

// Load reads the import graph of the module holding dir with the go
// command: every package of the module (./... at its root) and
// everything they link.
func Load(dir string) (*Graph, error) {
	mod, err := exec.Command("go", "list", "-C", dir, "-m", "-f", "{{.Path}}\n{{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", exitErr(err))
	}
	path, root, _ := strings.Cut(strings.TrimSpace(string(mod)), "\n")
	out, err := exec.Command("go", "list", "-C", root, "-deps",
		"-json=ImportPath,Imports,Deps,TestImports,XTestImports", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./...: %w", exitErr(err))
	}
	g := &Graph{Module: path, Root: root, Packages: map[string]*Package{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		g.Packages[p.ImportPath] = &p
	}
	return g, nil
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
