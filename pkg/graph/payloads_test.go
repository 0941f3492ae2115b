package graph

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ocpRealDir is the real OpenShift 4.20 payload beside the checkout.
const ocpRealDir = "../../../shared/payloads/ocp-real/release-manifests"

// ocpRealTasks reads the real payload's file names, in payload order, and
// makes one task per YAML document, taking document counts from the
// PROVENANCE.tsv next to the manifests (one task per file without it). Only
// names are read, never manifest contents, so Jobs and deletes are not
// known: none are marked. It skips the test when the payload is absent.
func ocpRealTasks(tb testing.TB) []*Task {
	tb.Helper()
	entries, err := os.ReadDir(ocpRealDir)
	if err != nil {
		tb.Skipf("real payload not available: %v", err)
	}
	docs := provenanceDocuments(filepath.Join(ocpRealDir, "..", "PROVENANCE.tsv"))
	var tasks []*Task
	for _, e := range entries { // ReadDir sorts by name, as the loader does
		name := e.Name()
		if e.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(name)) {
			continue
		}
		for d := range max(docs[name], 1) {
			task := fileTask(len(tasks), name)
			task.Name = fmt.Sprintf("%s#%d", name, d)
			tasks = append(tasks, task)
		}
	}
	return tasks
}

// provenanceDocuments maps file name to document count; empty if the
// file is missing or malformed.
func provenanceDocuments(path string) map[string]int {
	counts := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return counts
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	column := -1
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if column < 0 {
			column = slices.Index(fields, "documents")
			if column < 0 {
				return counts
			}
			continue
		}
		if len(fields) > column {
			if n, err := strconv.Atoi(fields[column]); err == nil {
				counts[fields[0]] = n
			}
		}
	}
	return counts
}

// realShapedPayload is a synthetic payload shaped like ocp-real: 395 files
// holding 516 documents, 13 run levels with ocp-real's file counts, and 36
// components, 9 of which span two run levels. A few tasks are deletes.
func realShapedPayload() []*Task {
	levels := []int{0, 3, 5, 10, 12, 20, 25, 30, 49, 50, 70, 80, 90}
	files := []int{17, 7, 13, 70, 4, 49, 18, 23, 1, 62, 23, 29, 79}
	componentsPer := []int{2, 2, 1, 6, 1, 5, 3, 3, 1, 8, 3, 4, 6} // 45 pairs over 36 names
	r := rand.New(rand.NewSource(1))
	extraDocs := make(map[int]int) // file number -> extra documents
	multi := r.Perm(395)[:41]      // ocp-real: 41 files hold several documents
	for _, f := range multi {
		extraDocs[f] = 1
	}
	for range 121 - len(multi) {
		extraDocs[multi[r.Intn(len(multi))]]++
	}
	var tasks []*Task
	next, fileNo := 0, 0
	for i, level := range levels {
		var comps []string
		for range componentsPer[i] {
			comps = append(comps, fmt.Sprintf("component%02d", next%36))
			next++
		}
		slices.Sort(comps)
		for f := range files[i] {
			comp := comps[f*len(comps)/files[i]]
			file := fmt.Sprintf("0000_%02d_%s_%03d.yaml", level, comp, f)
			for range 1 + extraDocs[fileNo] {
				tasks = append(tasks, fileTask(len(tasks), file))
			}
			fileNo++
		}
	}
	for i := 7; i < len(tasks); i += 101 {
		tasks[i].Delete = true
	}
	return tasks
}

// largePayload is a generated payload of n manifests: 40 run levels of 25
// components, one Job in every 1000 tasks and one delete in every 50.
func largePayload(n int) []*Task {
	tasks := make([]*Task, 0, n)
	perComponent := max(n/(40*25), 1)
	for i := 0; len(tasks) < n; i++ {
		level, comp, file := i/(25*perComponent), (i/perComponent)%25, i%perComponent
		task := fileTask(len(tasks), fmt.Sprintf("0000_%02d_component%02d_%04d.yaml", level, comp, file))
		task.Job = len(tasks)%1000 == 999
		task.Delete = len(tasks)%50 == 25
		tasks = append(tasks, task)
	}
	return tasks
}

// levelShape reports, per run level of an apply graph, how many nodes hold
// its tasks and the most of those that share a step (its parallel width).
type levelShape struct {
	level, tasks, nodes, width int
}

func shapeByRunLevel(g *Graph) []levelShape {
	stepOf := map[int]int{}
	for s, ids := range g.Steps() {
		for _, id := range ids {
			stepOf[id] = s
		}
	}
	byLevel := map[int]*levelShape{}
	perStep := map[[2]int]int{} // (level, step) -> nodes
	for id, n := range g.Nodes {
		seen := map[int]bool{}
		for _, t := range n.Tasks {
			shape := byLevel[t.RunLevel]
			if shape == nil {
				shape = &levelShape{level: t.RunLevel}
				byLevel[t.RunLevel] = shape
			}
			shape.tasks++
			if !seen[t.RunLevel] {
				seen[t.RunLevel] = true
				shape.nodes++
				perStep[[2]int{t.RunLevel, stepOf[id]}]++
				shape.width = max(shape.width, perStep[[2]int{t.RunLevel, stepOf[id]}])
			}
		}
	}
	var out []levelShape
	for _, s := range byLevel {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b levelShape) int { return a.level - b.level })
	return out
}

func TestPayloadFixtures(t *testing.T) {
	t.Run("the real-shaped payload has the real payload's size and spread", func(t *testing.T) {
		tasks := realShapedPayload()
		levels, comps := map[int]bool{}, map[string]bool{}
		for _, task := range tasks {
			levels[task.RunLevel], comps[task.Component] = true, true
		}
		if len(tasks) != 516 || len(levels) != 13 || len(comps) != 36 {
			t.Errorf("%d tasks, %d run levels, %d components; want 516, 13, 36", len(tasks), len(levels), len(comps))
		}
	})
	t.Run("the large payload has the requested size", func(t *testing.T) {
		if n := len(largePayload(10000)); n != 10000 {
			t.Errorf("%d tasks", n)
		}
	})
}

// TestOCPRealShape builds the update graph of the real payload's file
// names and logs its shape for docs/benchmarks.md.
func TestOCPRealShape(t *testing.T) {
	tasks := ocpRealTasks(t)
	for _, mode := range []Mode{ModeUpdate, ModeInstall, ModeReconcile} {
		g := Build(tasks, BuildOptions{Mode: mode})
		if err := g.Validate(); err != nil {
			t.Fatalf("%s graph invalid: %v", mode, err)
		}
		if g.TaskCount() != len(tasks) {
			t.Fatalf("%s graph holds %d of %d tasks", mode, g.TaskCount(), len(tasks))
		}
		withTasks := 0
		for _, n := range g.Nodes {
			if len(n.Tasks) > 0 {
				withTasks++
			}
		}
		t.Logf("%s: %d tasks, %d nodes (%d with tasks), %d steps", mode, len(tasks), len(g.Nodes), withTasks, len(g.Steps()))
	}
	g := Build(tasks, BuildOptions{Mode: ModeUpdate})
	t.Logf("| run level | tasks | nodes | parallel width |")
	for _, s := range shapeByRunLevel(g) {
		t.Logf("| %02d | %d | %d | %d |", s.level, s.tasks, s.nodes, s.width)
	}
}
