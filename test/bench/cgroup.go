package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryCgroup is a cgroup with a memory limit that the measured operator
// runs in, as a container with resources.limits.memory would.
type memoryCgroup struct {
	dir string
	// procs is the file a process writes its PID to to join.
	procs string
}

// newMemoryCgroup makes a cgroup limited to limit (a quantity such as
// 256Mi) under cgroup v2 or v1's memory controller. It needs root.
func newMemoryCgroup(limit string) (*memoryCgroup, error) {
	q, err := resource.ParseQuantity(limit)
	if err != nil || q.Value() <= 0 {
		return nil, fmt.Errorf("-operator-memory-limit %q is not a positive quantity such as 256Mi", limit)
	}
	name := "payload-applier-bench-" + strconv.Itoa(os.Getpid())
	parent, limitFile := "/sys/fs/cgroup", "memory.max"
	if _, err := os.Stat(filepath.Join(parent, "cgroup.controllers")); err != nil {
		parent, limitFile = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err == nil {
		if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(q.Value(), 10)), 0o644); err == nil {
			return &memoryCgroup{dir: dir, procs: filepath.Join(dir, "cgroup.procs")}, nil
		}
		_ = os.Remove(dir)
	}
	return nil, fmt.Errorf("-operator-memory-limit: cannot make a memory cgroup (needs root and a writable cgroup v1 memory or v2 hierarchy)")
}

// wrap returns the argv that joins the cgroup before exec'ing argv, so the
// process starts under the limit and reads it at start.
func (c *memoryCgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, c.procs}, argv...)
}

// remove deletes the cgroup once its processes have exited.
func (c *memoryCgroup) remove() { _ = os.Remove(c.dir) }
