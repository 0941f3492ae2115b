package graph

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

var propertySeed = flag.Int64("graph.seed", 0, "seed for TestRunProperties; 0 picks one from the clock")

// randomPayload is a payload shaped like a real one, in payload order: run
// levels ascending, components sorted inside a run level and sometimes
// spanning run levels, files with several documents, and unparsed names,
// Jobs and deletes sprinkled in.
func randomPayload(r *rand.Rand) []*Task {
	var tasks []*Task
	add := func(file string, level int, component string) {
		for range 1 + r.Intn(3) { // documents in the file
			name := fmt.Sprintf("%s#%d", file, len(tasks)) // documents share a file
			tasks = append(tasks, &Task{Index: len(tasks), File: file, Name: name, RunLevel: level, Component: component})
		}
	}
	level := 0
	for range 1 + r.Intn(6) {
		level += 1 + r.Intn(20)
		components := r.Perm(6)[:1+r.Intn(4)]
		slices.Sort(components)
		for _, c := range components {
			component := fmt.Sprintf("c%d", c)
			for f := range 1 + r.Intn(4) {
				if r.Intn(12) == 0 {
					add(fmt.Sprintf("unparsed-%d.yaml", len(tasks)), -1, "")
				}
				add(fmt.Sprintf("0000_%02d_%s_%02d.yaml", level, component, f), level, component)
			}
		}
	}
	for _, t := range tasks {
		t.Job = r.Intn(25) == 0
		t.Delete = r.Intn(6) == 0
		t.Passive = !t.Job && r.Intn(4) != 0 // a Job is a barrier
	}
	return tasks
}

// sameWave says whether tasks[a..b] may share a wave: waves are on, and
// every task from a to b is passive and in a's run level and component.
func sameWave(tasks []*Task, a, b int, strict bool) bool {
	if strict {
		return false
	}
	for k := a; k <= b; k++ {
		if !tasks[k].Passive || !sameGroup(tasks[a], tasks[k]) {
			return false
		}
	}
	return true
}

// mayOverlap says whether the mode lets apply tasks a and b (a earlier in
// payload order) run at the same time; every other pair must run in order.
// It restates the CVO rules directly on the task list, independently of
// Build: a Job orders everything around it; update allows overlap only
// between different component chunks of one run of a run level holding two
// or more components; install and reconcile allow it between different
// (run level, component) runs. Inside a component, only tasks of one wave
// overlap: no task starts before every barrier before it finished.
func mayOverlap(applies []*Task, a, b int, opts BuildOptions) bool {
	mode := opts.Mode
	for k := a; k <= b; k++ {
		if applies[k].Job {
			return false
		}
	}
	if sameWave(applies, a, b, opts.StrictOrder) {
		return true
	}
	if mode != ModeUpdate {
		for k := a; k < b; k++ {
			if !sameGroup(applies[k], applies[k+1]) {
				return true
			}
		}
		return false
	}
	level := applies[a].RunLevel
	chunks := 1
	for k := a; k <= b; k++ {
		if !applies[k].parsed() || applies[k].RunLevel != level {
			return false
		}
		if k > a && applies[k].Component != applies[k-1].Component {
			chunks++
		}
	}
	return chunks > 1
}

// expectRan simulates the graph with the planned outcomes: a node runs when
// all its In nodes completed, and its waves run, whole, until the first
// one in which a task does not succeed. Which tasks run does not depend on
// timing.
func expectRan(g *Graph, outcome map[*Task]error) map[*Task]bool {
	ran := map[*Task]bool{}
	completed := make([]bool, len(g.Nodes))
	for _, id := range g.TopoOrder() {
		n := g.Nodes[id]
		ok := true
		for _, p := range n.In {
			ok = ok && completed[p]
		}
		for _, wave := range n.Waves() {
			if !ok {
				break
			}
			for _, t := range wave {
				ran[t] = true
				ok = ok && outcome[t] == nil
			}
		}
		completed[id] = ok
	}
	return ran
}

func TestRunProperties(t *testing.T) {
	seed := *propertySeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -graph.seed=%d)", seed, seed)
	modes := []Mode{ModeUpdate, ModeInstall, ModeReconcile}
	for i := range 1000 {
		r := rand.New(rand.NewSource(seed + int64(i)))
		tasks := randomPayload(r)
		mode := modes[r.Intn(len(modes))]
		opts := BuildOptions{Mode: mode, Attempt: r.Intn(20), StrictOrder: r.Intn(4) == 0}
		outcome := map[*Task]error{}
		for _, task := range tasks {
			switch n := r.Intn(20); {
			case n < 2:
				outcome[task] = fmt.Errorf("planned failure of %d", task.Index)
			case n < 4 && task.Delete:
				outcome[task] = &WaitingError{On: "planned"}
			}
		}
		where := fmt.Sprintf("payload %d (seed %d, %s, attempt %d, strict %v)", i, seed+int64(i), mode, opts.Attempt, opts.StrictOrder)
		checkPass(t, where, tasks, opts, outcome, 1+r.Intn(8))
		if t.Failed() {
			return
		}
	}
}

// checkPass runs one payload through RunPass and checks every property.
func checkPass(t *testing.T, where string, tasks []*Task, opts BuildOptions, outcome map[*Task]error, parallelism int) {
	t.Helper()
	apply, deletes := Build(tasks, opts), BuildDeletes(tasks, opts)
	for name, g := range map[string]*Graph{"apply": apply, "delete": deletes} {
		if err := g.Validate(); err != nil {
			t.Fatalf("%s: %s graph invalid: %v", where, name, err)
		}
		for _, n := range g.Nodes {
			if opts.StrictOrder && n.WaveStarts != nil {
				t.Errorf("%s: %s node %d has waves %v in strict order", where, name, n.ID, n.WaveStarts)
			}
		}
	}

	var seq atomic.Int64
	start, finish := make([]int64, len(tasks)), make([]int64, len(tasks))
	calls := make([]atomic.Int32, len(tasks))
	fn := func(wantDelete bool) TaskFunc {
		return func(_ context.Context, task *Task) error {
			if calls[task.Index].Add(1) > 1 {
				t.Errorf("%s: %s ran twice", where, task)
			}
			if task.Delete != wantDelete {
				t.Errorf("%s: %s ran in the wrong walk", where, task)
			}
			start[task.Index] = seq.Add(1)
			err := outcome[task]
			finish[task.Index] = seq.Add(1)
			return err
		}
	}
	res := RunPass(context.Background(), Pass{
		Apply: apply, ApplyFn: fn(false), ApplyOptions: RunOptions{Parallelism: parallelism},
		Delete: deletes, DeleteFn: fn(true), DeleteOptions: RunOptions{Parallelism: parallelism},
	})
	ran := func(t *Task) bool { return start[t.Index] != 0 }

	// Which tasks run is fixed by the graph and the outcomes: a failure or
	// a wait stops only what comes after it.
	for name, g := range map[string]*Graph{"apply": apply, "delete": deletes} {
		want := expectRan(g, outcome)
		for _, n := range g.Nodes {
			for _, task := range n.Tasks {
				if ran(task) != want[task] {
					t.Errorf("%s: %s walk: %s ran=%v, want %v", where, name, task, ran(task), want[task])
				}
			}
		}
	}

	// The runner respects every edge and the order of waves inside every
	// node: a wave starts once the wave before it finished.
	done := make([]int64, len(apply.Nodes))
	for _, id := range apply.TopoOrder() {
		n := apply.Nodes[id]
		var ready int64
		for _, p := range n.In {
			ready = max(ready, done[p])
		}
		done[id] = ready
		for _, wave := range n.Waves() {
			var end int64
			for _, task := range wave {
				if !ran(task) {
					continue
				}
				if start[task.Index] < done[id] {
					t.Errorf("%s: %s started at %d before its prerequisites finished at %d", where, task, start[task.Index], done[id])
				}
				end = max(end, finish[task.Index])
			}
			done[id] = max(done[id], end)
		}
	}

	// The apply order obeys the mode's rules, restated from the tasks.
	var applies []*Task
	for _, task := range tasks {
		if !task.Delete {
			applies = append(applies, task)
		}
	}
	for b := range applies {
		if !ran(applies[b]) {
			continue
		}
		for a := range b {
			if mayOverlap(applies, a, b, opts) {
				continue
			}
			if outcome[applies[a]] != nil || finish[applies[a].Index] == 0 || finish[applies[a].Index] > start[applies[b].Index] {
				t.Errorf("%s: %s ran without %s completing before it", where, applies[b], applies[a])
			}
		}
	}

	// Deletes: within a component, each delete starts only after every
	// delete ordered after it in the payload completed (its object gone),
	// unless the two and every delete between them share a wave.
	var lastApply int64
	for _, task := range applies {
		lastApply = max(lastApply, finish[task.Index])
	}
	for _, b := range tasks {
		if !b.Delete || !ran(b) {
			continue
		}
		if start[b.Index] < lastApply {
			t.Errorf("%s: delete %s started at %d before the last apply finished at %d", where, b, start[b.Index], lastApply)
		}
		for _, a := range tasks {
			createdLater := a.RunLevel > b.RunLevel || (a.RunLevel == b.RunLevel && a.Index > b.Index)
			if !a.Delete || !b.parsed() || a.Component != b.Component || !createdLater {
				continue
			}
			if deletesShareWave(tasks, a, b, opts.StrictOrder) {
				continue
			}
			if outcome[a] != nil || finish[a.Index] == 0 || finish[a.Index] > start[b.Index] {
				t.Errorf("%s: delete %s ran before delete %s completed", where, b, a)
			}
		}
	}

	// Results: every failure is an error, waits never are.
	for name, pair := range map[string]struct {
		res    *Result
		delete bool
	}{"apply": {res.Apply, false}, "delete": {res.Delete, true}} {
		var failed int
		for _, task := range tasks {
			if task.Delete == pair.delete && ran(task) && outcome[task] != nil && !errors.Is(outcome[task], ErrWaiting) {
				failed++
			}
		}
		if len(pair.res.Errors) != failed || len(pair.res.Summary()) != failed {
			t.Errorf("%s: %s walk reported %d errors, %d failed", where, name, len(pair.res.Errors), failed)
		}
		for _, err := range pair.res.Errors {
			if errors.Is(err, ErrWaiting) {
				t.Errorf("%s: %s walk reported a wait as an error: %v", where, name, err)
			}
		}
	}
}

// deletesShareWave says whether deletes a and b of one component (a created
// later) may run together: waves are on, both share a run level, and they
// and every delete of the component between them in reverse order are
// passive.
func deletesShareWave(tasks []*Task, a, b *Task, strict bool) bool {
	if strict || !a.Passive || !b.Passive || a.RunLevel != b.RunLevel {
		return false
	}
	for _, c := range tasks {
		if c.Delete && c.parsed() && c.Component == b.Component && reverseOrder(a, c) < 0 && reverseOrder(c, b) < 0 && !c.Passive {
			return false
		}
	}
	return true
}
