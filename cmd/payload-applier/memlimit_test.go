package main

import (
	"math"
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

func TestGoMemoryLimit(t *testing.T) {
	container := func(limit string) fstest.MapFS {
		return fstest.MapFS{
			"proc/self/cgroup":         &fstest.MapFile{Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte(limit + "\n")},
		}
	}
	const mi = 1 << 20
	for _, c := range []struct {
		name     string
		fs       fstest.MapFS
		env      string
		flag     string
		explicit bool
		want     int64
		err      bool
	}{
		{name: "default, no container limit", fs: fstest.MapFS{}, want: 64 * mi},
		{name: "default under a large container limit", fs: container("1073741824"), want: 64 * mi},
		{name: "90% of a smaller container limit", fs: container("52428800"), want: 52428800 / 100 * memoryLimitPercent},
		{name: "GOMEMLIMIT set: left alone", fs: container("52428800"), env: "500MiB", want: 0},
		{name: "the flag wins over GOMEMLIMIT", fs: fstest.MapFS{}, env: "500MiB", flag: "128Mi", explicit: true, want: 128 * mi},
		{name: "0: none", fs: container("52428800"), flag: "0", explicit: true, want: math.MaxInt64},
		{name: "not a quantity", fs: fstest.MapFS{}, flag: "lots", explicit: true, err: true},
		{name: "negative", fs: fstest.MapFS{}, flag: "-1Mi", explicit: true, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			got, err := goMemoryLimit(c.fs, c.flag, c.explicit)
			if (err != nil) != c.err || got != c.want {
				t.Errorf("goMemoryLimit = %d, %v; want %d, error %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestSetGoMemoryLimitSetsTheRuntimes(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	got, err := setGoMemoryLimit(fstest.MapFS{}, "96Mi", true)
	if err != nil || got != 96<<20 {
		t.Fatalf("setGoMemoryLimit = %d, %v", got, err)
	}
	if rt := debug.SetMemoryLimit(-1); rt != 96<<20 {
		t.Errorf("runtime's limit = %d, want %d", rt, 96<<20)
	}
}
