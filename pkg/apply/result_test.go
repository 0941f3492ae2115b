package apply

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryActionHasAPlanWord makes a new Action decide its plan word, or
// that no plan reports it, and keeps the words those of the plan contract.
func TestEveryActionHasAPlanWord(t *testing.T) {
	declared := declaredActions(t)
	if len(declared) == 0 {
		t.Fatal("found no Action constants")
	}
	for name, a := range declared {
		if _, ok := planWords[a]; !ok {
			t.Errorf("%s (%q) is not in planWords: give it the word a plan prints, or \"\" if no plan reports it", name, a)
		}
	}
	values := slices.Collect(maps.Values(declared))
	for a := range planWords {
		if !slices.Contains(values, a) {
			t.Errorf("planWords holds %q, which is no Action constant", a)
		}
	}

	var words []string
	for _, a := range declared {
		if w := a.Planned(); w != "" && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	slices.Sort(words)
	// The `payload-applier plan -o json` contract: never rename one.
	want := []string{"already-deleted", "apply", "create", "delete", "skip", "unchanged", "update"}
	if !slices.Equal(words, want) {
		t.Errorf("plan words %q, want %q", words, want)
	}

	for _, a := range []Action{ActionFailed, ActionNotRun, Action("no-such-action")} {
		if w := a.Planned(); w != "" {
			t.Errorf("%q is planned as %q; no plan reports it", a, w)
		}
	}
}

// declaredActions reads the package's source for its constants of type
// Action, by name.
func declaredActions(t *testing.T) map[string]Action {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Action{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit := actionLiteral(vs.Type, vs.Values[i]); lit != nil {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatalf("%s: %v", name.Name, err)
						}
						out[name.Name] = Action(v)
					}
				}
			}
		}
	}
	return out
}

// actionLiteral is the string literal of `X Action = "x"` or
// `X = Action("x")`, or nil for a constant of another type.
func actionLiteral(typ, value ast.Expr) *ast.BasicLit {
	if id, ok := typ.(*ast.Ident); ok && id.Name == "Action" {
		lit, _ := value.(*ast.BasicLit)
		return lit
	}
	if call, ok := value.(*ast.CallExpr); ok && typ == nil && len(call.Args) == 1 {
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "Action" {
			lit, _ := call.Args[0].(*ast.BasicLit)
			return lit
		}
	}
	return nil
}
