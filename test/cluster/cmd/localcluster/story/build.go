package story

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the main module, whose root holds cmd/ and examples/.
const modulePath = "github.com/payload-applier/payload-applier"

// ModuleRoot finds the main module's root from the working directory up,
// so that the demo and its tests work from any directory of the checkout.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for module %s in the working directory or above it; run from the payload-applier checkout", modulePath)
		}
		dir = parent
	}
}

func isModuleRoot(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// BuildCLI builds cmd/payload-applier of the module at root into out. Go's
// build cache makes a rebuild of unchanged sources take about a second.
func BuildCLI(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/payload-applier")
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/payload-applier: %w\n%s", err, strings.TrimSpace(output.String()))
	}
	return nil
}
