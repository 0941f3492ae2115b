package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitPercent is the part of the container's memory limit the Go
// runtime aims to stay under; the rest is for memory it does not manage
// (goroutine stacks, the binary's pages, cgo).
const memoryLimitPercent = 90

// cgroupLimit returns the memory limit in bytes of the cgroup this process
// runs in, the smallest limit on the way from its cgroup to the root, read
// from root (a view of / such as os.DirFS("/")). It reads cgroup v2
// (memory.max) and v1 (memory.limit_in_bytes); ok is false without a limit.
func cgroupLimit(root fs.FS) (limit uint64, ok bool) {
	f, err := root.Open("proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var v1, v2 string
	var haveV1, haveV2 bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, haveV2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1, haveV1 = parts[2], true
		}
	}
	if haveV1 {
		if l, ok := smallestLimit(root, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"); ok {
			return l, true
		}
	}
	if haveV2 {
		for _, mount := range []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"} {
			if l, ok := smallestLimit(root, mount, v2, "memory.max"); ok {
				return l, true
			}
		}
	}
	return 0, false
}

// smallestLimit walks from the cgroup at mount/cgroupPath up to mount and
// returns the smallest finite limit in file. A container usually sees its
// own cgroup as the mount's root (a cgroup namespace), so the mount itself
// is read too.
func smallestLimit(root fs.FS, mount, cgroupPath, file string) (uint64, bool) {
	var best uint64
	found := false
	dir := path.Clean("/" + cgroupPath)
	for {
		if l, ok := readLimit(root, path.Join(mount, dir, file)); ok && (!found || l < best) {
			best, found = l, true
		}
		if dir == "/" {
			return best, found
		}
		dir = path.Dir(dir)
	}
}

// readLimit reads one limit file: "max" (v2) and v1's page-rounded
// "unlimited" (near 2^63) mean no limit.
func readLimit(root fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(root, strings.TrimPrefix(name, "/"))
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n >= math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}

// defaultGoMemoryLimit is start's soft memory limit for the Go runtime:
// on ocp-real the install's anonymous memory then peaks at about 59 MiB
// instead of 84–92 MiB, at no measured cost in time (docs/benchmarks.md).
// A heap that has to outgrow it costs collector CPU, which the runtime
// caps at half the process's, never a refused allocation.
const defaultGoMemoryLimit = "64Mi"

// goMemoryLimit decides the Go runtime's soft memory limit: the flag when
// given (0 for none), else GOMEMLIMIT's when set (0: leave it), else the
// default, or 90% of the container's memory limit when that is lower.
func goMemoryLimit(root fs.FS, flag string, explicit bool) (int64, error) {
	if explicit {
		q, err := resource.ParseQuantity(flag)
		if err != nil || q.Sign() < 0 {
			return 0, fmt.Errorf("--go-memory-limit %q: want a quantity such as 64Mi, or 0 for none", flag)
		}
		if q.IsZero() {
			return math.MaxInt64, nil
		}
		return q.Value(), nil
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	def := resource.MustParse(defaultGoMemoryLimit)
	soft := def.Value()
	if l, ok := cgroupLimit(root); ok {
		soft = min(soft, int64(l/100*memoryLimitPercent))
	}
	return soft, nil
}

// setGoMemoryLimit gives the Go runtime the limit goMemoryLimit decides:
// the collector then works harder as the heap nears it, rather than let
// garbage grow the process, or the kernel kill its container. It returns
// the limit set, or 0 when it left the runtime's.
func setGoMemoryLimit(root fs.FS, flag string, explicit bool) (int64, error) {
	soft, err := goMemoryLimit(root, flag, explicit)
	if err != nil || soft == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(soft)
	return soft, nil
}
