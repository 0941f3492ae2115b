package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
)

// kubectlTool runs `kubectl apply --server-side` and `kubectl delete` as its
// own user. kubectl handles the files of a directory one object at a time.
type kubectlTool struct {
	bin        string
	kubeconfig string
}

func (t *kubectlTool) name() string { return toolKubectl }

// kubectl applies one object at a time, so a run of 1000 takes about a
// minute here: it is measured once, at the smaller sizes, and its deletes
// (which also wait object by object) are not measured, to keep `make bench`
// within its time budget.
func (t *kubectlTool) maxReps() int         { return 1 }
func (t *kubectlTool) maxSize() int         { return 1000 }
func (t *kubectlTool) measuresDelete() bool { return false }
func (t *kubectlTool) deleteReps() int      { return 0 }
func (t *kubectlTool) userName() string     { return "bench-kubectl" }

func (t *kubectlTool) install(ctx context.Context, w *workload) error {
	// --force-conflicts takes fields over as payload-applier's force does.
	return t.run(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager=bench-kubectl", "-f", w.flatDir)
}

func (t *kubectlTool) resync(ctx context.Context, w *workload) error { return t.install(ctx, w) }

func (t *kubectlTool) remove(ctx context.Context, w *workload) error {
	return t.run(ctx, "delete", "--wait=true", "--ignore-not-found", "-f", w.flatDir)
}

func (t *kubectlTool) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, t.bin, append(args, "--kubeconfig", t.kubeconfig)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+t.kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", args[0], err, tail(out.String(), 6))
	}
	return nil
}
