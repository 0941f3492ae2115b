package clusterversion

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestThePackageReadsNothing: the model decides from what it is given.
// Its files import no client, no HTTP and none of the packages that reach
// a cluster or a registry, and never read the clock.
func TestThePackageReadsNothing(t *testing.T) {
	forbidden := []string{
		"k8s.io/client-go",
		"net/http",
		"os",
		"github.com/openshift/client-go",
		"github.com/payload-applier/payload-applier/pkg/apply",
		"github.com/payload-applier/payload-applier/pkg/operator",
		"github.com/payload-applier/payload-applier/pkg/releaseimage",
		"github.com/payload-applier/payload-applier/pkg/signature",
		"github.com/payload-applier/payload-applier/pkg/egress",
		"github.com/payload-applier/payload-applier/pkg/updategraph",
		"github.com/payload-applier/payload-applier/pkg/clusterconditions",
	}
	// Record types only: the stores in these packages need a client,
	// which this package cannot make.
	allowed := map[string]bool{
		"github.com/payload-applier/payload-applier/pkg/apply/deletion": true,
		"github.com/payload-applier/payload-applier/pkg/apply/cleanup":  true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if allowed[path] {
				continue
			}
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s reads the clock: time.%s", name, sel.Sel.Name)
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "metav1" && sel.Sel.Name == "Now" {
				t.Errorf("%s reads the clock: metav1.Now", name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files; the test runs in the wrong directory", checked)
	}
}
