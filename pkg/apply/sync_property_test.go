package apply

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

var syncSeed = flag.Int64("sync.seed", 0, "seed for TestSyncProperties; 0 picks one from the clock")

// randomRelease is a payload of ConfigMaps shaped like a real one: run
// levels ascending, components sorted inside a run level, some spanning
// run levels, and deletes among the applies. Every object a delete
// manifest names exists; fail holds the applies the cluster refuses.
func randomRelease(t *testing.T, r *rand.Rand) (docs []planDoc, live []runtime.Object, fail map[string]bool) {
	fail = map[string]bool{}
	level := 0
	for range 1 + r.Intn(5) {
		level += 1 + r.Intn(20)
		components := r.Perm(5)[:1+r.Intn(3)]
		slices.Sort(components)
		for _, c := range components {
			for f := range 1 + r.Intn(4) {
				name := fmt.Sprintf("cm-%03d", len(docs))
				file := fmt.Sprintf("0000_%02d_c%d_%02d_%s.yaml", level, c, f, name)
				switch n := r.Intn(10); {
				case n < 3:
					docs = append(docs, planDoc{file, cmYAML(name, "v", deleteAnn)})
					live = append(live, liveCM(name, "v"))
				case n < 4:
					fail[name] = true
					fallthrough
				default:
					docs = append(docs, planDoc{file, cmYAML(name, "v")})
				}
			}
		}
	}
	return docs, live, fail
}

// TestSyncProperties runs Engine.Sync, the production pass, on random
// payloads and checks what the cluster saw: every delete comes after the
// last apply, a failed apply holds back only what the graph puts after it
// and no delete, and each component's deletes go in reverse order.
func TestSyncProperties(t *testing.T) {
	seed := *syncSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -sync.seed=%d)", seed, seed)
	modes := []graph.Mode{graph.ModeUpdate, graph.ModeInstall, graph.ModeReconcile}
	for i := range 150 {
		r := rand.New(rand.NewSource(seed + int64(i)))
		docs, live, fail := randomRelease(t, r)
		mode := modes[r.Intn(len(modes))]
		strict := r.Intn(3) == 0
		where := fmt.Sprintf("payload %d (seed %d, %s, strict %v)", i, seed+int64(i), mode, strict)
		checkSync(t, where, docs, live, fail, mode, r.Intn(20), strict)
		if t.Failed() {
			return
		}
	}
}

func checkSync(t *testing.T, where string, docs []planDoc, live []runtime.Object, fail map[string]bool, mode graph.Mode, attempt int, strict bool) {
	t.Helper()
	rel := planRelease(t, docs...)
	rm, dyn := fakeConfigMaps(live...)
	dyn.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		name := a.(clienttesting.CreateAction).GetObject().(interface{ GetName() string }).GetName()
		if fail[name] {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, name, fmt.Errorf("planned failure"))
		}
		return false, nil, nil
	})
	// The fake serializes reactors, so the trace is the order the cluster saw.
	var trace []clienttesting.Action
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v == "create" || v == "patch" || v == "delete" {
			trace = append(trace, a)
		}
		return false, nil, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: mode, Attempt: attempt, StrictOrder: strict,
		Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1}, Parallelism: 1 + int(time.Now().UnixNano()%8)})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}

	nameOf := func(a clienttesting.Action) string {
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			return a.GetName()
		case clienttesting.PatchAction:
			return a.GetName()
		case clienttesting.CreateAction:
			return a.GetObject().(interface{ GetName() string }).GetName()
		}
		return ""
	}
	lastApply, firstDelete := -1, len(trace)
	deleted := map[string]int{}
	for i, a := range trace {
		if a.GetVerb() == "delete" {
			firstDelete = min(firstDelete, i)
			deleted[nameOf(a)] = i
		} else {
			lastApply = i
		}
	}
	if firstDelete < lastApply {
		t.Errorf("%s: %s went out before the apply of %s", where, nameOf(trace[firstDelete]), nameOf(trace[lastApply]))
	}

	// The applies that ran are those the graph reaches past the failures:
	// a failure lets its wave finish and stops the waves after it.
	tasks := Tasks(rel)
	applyGraph := graph.Build(tasks, graph.BuildOptions{Mode: mode, Attempt: attempt, StrictOrder: strict})
	wantRan := map[int]bool{}
	completed := make([]bool, len(applyGraph.Nodes))
	for _, id := range applyGraph.TopoOrder() {
		n := applyGraph.Nodes[id]
		ok := true
		for _, p := range n.In {
			ok = ok && completed[p]
		}
		for _, wave := range n.Waves() {
			if !ok {
				break
			}
			for _, task := range wave {
				wantRan[task.Index] = true
				ok = ok && !fail[rel.Manifests[task.Index].Obj.GetName()]
			}
		}
		completed[id] = ok
	}
	for i, o := range res.Objects {
		m := rel.Manifests[i]
		switch {
		case m.Delete() && mode == graph.ModeUpdate:
			// Nothing holds these objects: every delete runs to the end,
			// whatever the applies did.
			if _, ok := deleted[m.Obj.GetName()]; !ok || o.Action != ActionDeleted {
				t.Errorf("%s: %s was not deleted (%s: %s)", where, m.ID(), o.Action, o.Message)
			}
		case m.Delete():
			if _, ok := deleted[m.Obj.GetName()]; ok {
				t.Errorf("%s: a %s pass deleted %s, which no update claimed", where, mode, m.ID())
			}
		case (o.Action != ActionNotRun) != wantRan[i]:
			t.Errorf("%s: %s ran=%v (%s), want %v", where, m.ID(), o.Action != ActionNotRun, o.Action, wantRan[i])
		case wantRan[i] && fail[m.Obj.GetName()] != (o.Action == ActionFailed):
			t.Errorf("%s: %s ended %s", where, m.ID(), o.Action)
		}
	}

	// Within a component, deletes go last-created first; ConfigMaps of one
	// run level share a wave unless the order is strict.
	for _, a := range rel.Manifests {
		for _, b := range rel.Manifests {
			if !a.Delete() || !b.Delete() || a.Component != b.Component || a.Index >= b.Index {
				continue
			}
			if !strict && a.RunLevel == b.RunLevel {
				continue
			}
			ia, aok := deleted[a.Obj.GetName()]
			ib, bok := deleted[b.Obj.GetName()]
			if aok && bok && ia < ib {
				t.Errorf("%s: %s was deleted before %s, which comes after it", where, a.ID(), b.ID())
			}
		}
	}
}
