package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// sample is one timed step of one tool.
type sample struct {
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"`
	Writes   int     `json:"writes"`
	DryRuns  int     `json:"dryRuns,omitempty"`
	Err      string  `json:"error,omitempty"`
}

type realInfo struct {
	Documents, Applied, MissingNamespaces, Typed int
}

type rssInfo struct {
	PeakMiB, FinalMiB, InstallSec, TotalSec float64
	// AnonPeakMiB is the largest sampled RssAnon: heap and stacks, without
	// the binary's file-backed pages.
	AnonPeakMiB float64
	Manifests   int
	// MemoryLimit is the cgroup limit the operator ran under, if any.
	MemoryLimit string `json:",omitempty"`
}

// results collects every sample and what the report says about the run.
type results struct {
	mu       sync.Mutex
	Date     string                         `json:"date"`
	Machine  machine                        `json:"machine"`
	Cluster  string                         `json:"cluster"`
	Samples  map[string]map[string][]sample `json:"samples"`
	Real     realInfo                       `json:"real"`
	RSS      *rssInfo                       `json:"rss,omitempty"`
	Notes    []string                       `json:"notes,omitempty"`
	Reps     int                            `json:"reps"`
	Sizes    []int                          `json:"sizes"`
	CMCount  int                            `json:"configmaps"`
	Duration string                         `json:"duration"`
}

type machine struct {
	CPUs      int    `json:"cpus"`
	Model     string `json:"model"`
	MemoryGiB string `json:"memory"`
	Go        string `json:"go"`
	LoadAvg   string `json:"loadavg"`
}

func newResults(o options) *results {
	return &results{
		Date:    time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Machine: readMachine(),
		Samples: map[string]map[string][]sample{},
		Reps:    o.reps,
		Sizes:   o.sizes,
		CMCount: o.cmCount,
	}
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				var kb float64
				fmt.Sscan(f[1], &kb)
				m.MemoryGiB = fmt.Sprintf("%.1f GiB", kb/1024/1024)
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

func (r *results) describeCluster(e *env) {
	v := e.c.Versions()
	r.Cluster = fmt.Sprintf("etcd %s, kube-apiserver %s, kube-controller-manager %s", v.Etcd, v.KubeAPIServer, v.KubeControllerManager)
}

func (r *results) add(id, tool string, s sample) sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Samples[id] == nil {
		r.Samples[id] = map[string][]sample{}
	}
	r.Samples[id][tool] = append(r.Samples[id][tool], s)
	return s
}

func (r *results) notef(format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// stat is the median of a tool's successful samples of one measurement.
type stat struct {
	ok               bool
	seconds          float64
	writes, requests int
	n, failed        int
	err              string
	all              []float64
}

func (r *results) stat(id, tool string) stat {
	var st stat
	var secs []float64
	var writes, reqs []int
	for _, s := range r.Samples[id][tool] {
		if s.Err != "" {
			st.failed++
			st.err = s.Err
			continue
		}
		secs = append(secs, s.Seconds)
		writes = append(writes, s.Writes)
		reqs = append(reqs, s.Requests)
	}
	st.n = len(secs)
	if st.n == 0 {
		return st
	}
	st.ok = true
	st.all = append([]float64(nil), secs...)
	st.seconds = median(secs)
	sort.Ints(writes)
	sort.Ints(reqs)
	st.writes = writes[len(writes)/2]
	st.requests = reqs[len(reqs)/2]
	return st
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// kappStat is kapp's result, or, where kapp failed on the files as they
// are, its result on the same objects rewritten through their Go types.
func (r *results) kappStat(id string) stat {
	if st := r.stat(id, toolKapp); st.ok {
		return st
	}
	return r.stat(id, toolKappTyped)
}

// measurement describes one row of the output.
type measurement struct {
	id, title string
	// base is the tool the first ratio is taken against.
	base string
}

func (r *results) measurements() []measurement {
	out := []measurement{
		{mCreate, fmt.Sprintf("create %d ConfigMaps", r.CMCount), toolRaw},
		{mResync, fmt.Sprintf("no-op resync of %d ConfigMaps", r.CMCount), toolRaw},
		{mDelete, fmt.Sprintf("delete %d ConfigMaps until gone", r.CMCount), toolRaw},
		{mOneCM, fmt.Sprintf("one component: create %d ConfigMaps", r.CMCount), toolRaw},
		{mOneMixed, fmt.Sprintf("one component: create %d mixed kinds, a Deployment every %d", r.CMCount, deploymentEvery), toolRaw},
		{mRealInstallEmpty, "real payload: install, empty cluster", toolKapp},
		{mRealInstall, "real payload: install", toolKapp},
		{mRealResync, "real payload: no-op resync", toolKapp},
	}
	for _, size := range r.Sizes {
		out = append(out,
			measurement{mixedID("install", size), fmt.Sprintf("mixed %d: install", size), toolRaw},
			measurement{mixedID("resync", size), fmt.Sprintf("mixed %d: no-op resync", size), toolRaw})
	}
	return out
}

// line renders one measurement: each tool's median time, with its ratio
// to the raw limit and to kapp.
func (r *results) line(m measurement) string {
	var parts []string
	raw, kapp := r.stat(m.id, toolRaw), r.kappStat(m.id)
	for _, t := range allTools {
		st := r.stat(m.id, t)
		if !st.ok {
			if st.failed > 0 {
				parts = append(parts, fmt.Sprintf("%s failed", t))
			}
			continue
		}
		p := fmt.Sprintf("%s %.2fs", t, st.seconds)
		var ratios []string
		if raw.ok && t != toolRaw {
			ratios = append(ratios, fmt.Sprintf("%.2f× raw", st.seconds/raw.seconds))
		}
		if kapp.ok && t != toolKapp && t != toolKappTyped {
			ratios = append(ratios, fmt.Sprintf("%.2f× kapp", st.seconds/kapp.seconds))
		}
		if strings.Contains(m.id, "resync") {
			ratios = append(ratios, fmt.Sprintf("%d writes", st.writes))
		}
		if len(ratios) > 0 {
			p += " (" + strings.Join(ratios, ", ") + ")"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%-34s %s", m.title+":", strings.Join(parts, " | "))
}

// write prints the summary lines and writes the JSON, the docs section and
// the chart.
func (r *results) write(o options) error {
	fmt.Printf("\nbenchmarks (%s; %d CPUs, %s, %s; medians of up to %d runs)\n", r.Date, r.Machine.CPUs, r.Machine.Model, r.Machine.MemoryGiB, r.Reps)
	for _, m := range r.measurements() {
		if len(r.Samples[m.id]) == 0 {
			continue
		}
		fmt.Println(r.line(m))
	}
	if r.RSS != nil {
		fmt.Printf("%-34s %.1f MiB peak (VmHWM), %.1f MiB at the end\n", "operator RSS, real payload:", r.RSS.PeakMiB, r.RSS.FinalMiB)
	}
	for _, g := range r.goals() {
		fmt.Printf("goal %-44s %s\n", g.name+":", g.verdict())
	}
	fmt.Printf("bench took %s\n", r.Duration)
	if o.jsonOut != "" {
		if err := os.MkdirAll(filepath.Dir(o.jsonOut), 0o755); err != nil {
			return err
		}
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, data, 0o644); err != nil {
			return err
		}
	}
	if o.chart != "" && len(r.Sizes) > 0 && o.jsonOut != "" {
		if err := drawChart(o.jsonOut, o.chart); err != nil {
			r.notef("The chart was not drawn: %v", err)
			o.chart = ""
		}
	}
	if o.docs != "" {
		return r.writeDocs(o.docs, o.chart)
	}
	return nil
}
