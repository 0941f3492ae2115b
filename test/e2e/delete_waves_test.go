package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// TestDeleteWavesInOneComponent removes a one-component release whose
// ConfigMaps surround a PriorityClass, a barrier: the teardown runs in
// reverse, the later ConfigMaps' deletes together, then the PriorityClass
// alone, then the earlier ConfigMaps together. In strict order no two
// deletes are ever in flight at once.
func TestDeleteWavesInOneComponent(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			c := newClients(t)
			ledgerNS := testCluster.CreateNamespace(t)
			ns := testCluster.CreateNamespace(t)
			e := newEngine(t, ledgerNS)
			pc := uniqueName(t, "dwaves")
			t.Cleanup(func() {
				_ = c.kube.SchedulingV1().PriorityClasses().Delete(context.Background(), pc, metav1.DeleteOptions{})
			})

			const perWave = 6
			files := map[string]string{}
			for i := range perWave {
				files[fmt.Sprintf("0000_50_dwaves_01_a%02d.yaml", i)] = configMap(ns, fmt.Sprintf("a-%02d", i), "x")
				files[fmt.Sprintf("0000_50_dwaves_03_b%02d.yaml", i)] = configMap(ns, fmt.Sprintf("b-%02d", i), "x")
			}
			files["0000_50_dwaves_02_priorityclass.yaml"] = `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: ` + pc + `
  annotations:
    ` + include + `
value: 1000
`
			requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", files)), graph.ModeInstall))

			for f, body := range files {
				files[f] = withDelete(body)
			}
			v2 := load(t, writePayload(t, "1.0.1", files))
			mark := auditMark(t)
			opts := fastOptions(graph.ModeUpdate)
			opts.StrictOrder = strict
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, err := e.Sync(ctx, v2, opts)
			if err != nil {
				t.Fatal(err)
			}
			requireComplete(t, res)

			events, err := testCluster.WaitForAudit(ctx, mark, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, Verb: "delete"}, 2*perWave+1)
			if err != nil {
				t.Fatal(err)
			}
			type span struct{ from, to time.Time }
			var a, b []span
			var barrier *span
			for _, ev := range events {
				if ev.ObjectRef == nil {
					continue
				}
				s := span{ev.RequestReceivedTimestamp, ev.StageTimestamp}
				switch name := ev.ObjectRef.Name; {
				case ev.ObjectRef.Resource == "priorityclasses" && name == pc:
					barrier = &s
				case ev.ObjectRef.Namespace == ns && strings.HasPrefix(name, "a-"):
					a = append(a, s)
				case ev.ObjectRef.Namespace == ns && strings.HasPrefix(name, "b-"):
					b = append(b, s)
				}
			}
			if barrier == nil || len(a) != perWave || len(b) != perWave {
				t.Fatalf("deletes seen: PriorityClass %v, %d of the a- ConfigMaps, %d of the b- ones; want each once", barrier != nil, len(a), len(b))
			}
			for _, s := range b {
				if !s.to.Before(barrier.from) && !s.to.Equal(barrier.from) {
					t.Errorf("a later ConfigMap's delete ended at %s, after the barrier's began at %s", s.to.Format(time.RFC3339Nano), barrier.from.Format(time.RFC3339Nano))
				}
			}
			for _, s := range a {
				if s.from.Before(barrier.to) {
					t.Errorf("an earlier ConfigMap's delete began at %s, before the barrier's ended at %s", s.from.Format(time.RFC3339Nano), barrier.to.Format(time.RFC3339Nano))
				}
			}
			overlapping := func(spans []span) bool {
				for i := range spans {
					for j := range spans {
						if i != j && spans[i].from.Before(spans[j].to) && spans[j].from.Before(spans[i].to) {
							return true
						}
					}
				}
				return false
			}
			all := append(append(append([]span{}, a...), b...), *barrier)
			switch {
			case strict && overlapping(all):
				t.Error("in strict order two deletes were in flight at once")
			case !strict && !overlapping(a) && !overlapping(b):
				t.Error("no two deletes of a wave were in flight at once: the waves ran one at a time")
			}
		})
	}
}
