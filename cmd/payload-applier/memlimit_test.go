package main

import (
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestCgroupLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := []struct {
		name  string
		fs    fstest.MapFS
		want  uint64
		limit bool
	}{
		{"no cgroup file", fstest.MapFS{}, 0, false},
		{"v2 in a cgroup namespace", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("268435456\n"),
		}, 268435456, true},
		{"v2 unlimited", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0, false},
		{"v2 smallest on the way up", fstest.MapFS{
			"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":    file("104857600\n"),
			"sys/fs/cgroup/kubepods/memory.max":         file("209715200\n"),
		}, 104857600, true},
		{"v2 under the unified mount of a hybrid host", fstest.MapFS{
			"proc/self/cgroup":                    file("1:name=systemd:/\n0::/c1\n"),
			"sys/fs/cgroup/unified/c1/memory.max": file("1073741824\n"),
		}, 1073741824, true},
		{"v1 memory controller", fstest.MapFS{
			"proc/self/cgroup": file("5:cpu,cpuacct:/c1\n4:memory:/c1\n0::/\n"),
			"sys/fs/cgroup/memory/c1/memory.limit_in_bytes": file("536870912\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":    file("9223372036854771712\n"),
		}, 536870912, true},
		{"v1 unlimited", fstest.MapFS{
			"proc/self/cgroup": file("4:memory:/c1\n"),
			"sys/fs/cgroup/memory/c1/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, false},
		{"garbage", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := cgroupLimit(c.fs)
			if got != c.want || ok != c.limit {
				t.Errorf("cgroupLimit = %d, %v; want %d, %v", got, ok, c.want, c.limit)
			}
		})
	}
}

func TestSetMemoryLimitFromCgroupLeavesGOMEMLIMIT(t *testing.T) {
	fs := fstest.MapFS{
		"proc/self/cgroup":         &fstest.MapFile{Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("1073741824\n")},
	}
	t.Setenv("GOMEMLIMIT", "500MiB")
	if got := setMemoryLimitFromCgroup(fs); got != 0 {
		t.Errorf("with GOMEMLIMIT set, the limit was changed to %d", got)
	}
}

func TestSetMemoryLimitFromCgroup(t *testing.T) {
	fs := fstest.MapFS{
		"proc/self/cgroup":         &fstest.MapFile{Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("1073741824\n")},
	}
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	want := int64(1073741824 / 100 * memoryLimitPercent)
	if got := setMemoryLimitFromCgroup(fs); got != want {
		t.Errorf("limit set = %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("runtime's limit = %d, want %d", got, want)
	}
}
