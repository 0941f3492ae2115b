package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// waveObject is one object of the waves payload, for the audit check.
type waveObject struct{ resource, namespace, name string }

// TestWavesApplyOneComponentAroundItsBarriers applies a one-component
// payload whose ConfigMaps surround a Namespace, a CRD and a custom
// resource: the passive objects go out in waves, every barrier runs alone,
// and what needs the namespace or the CRD lands, in the order the waves
// say and without a single refused write.
func TestWavesApplyOneComponentAroundItsBarriers(t *testing.T) {
	for _, mode := range []graph.Mode{graph.ModeUpdate, graph.ModeInstall} {
		t.Run(string(mode), func(t *testing.T) {
			c := newClients(t)
			ledgerNS := testCluster.CreateNamespace(t)
			e := newEngine(t, ledgerNS)
			target := uniqueName(t, "waves")
			group := target + ".example.com"
			t.Cleanup(func() {
				bg := context.Background()
				_ = c.kube.CoreV1().Namespaces().Delete(bg, target, metav1.DeleteOptions{})
				_ = c.dynamic.Resource(payload.CRDGVR).Delete(bg, "gizmos."+group, metav1.DeleteOptions{})
			})

			// The expected waves, in order; each holds the objects of one.
			var waves [][]waveObject
			var docs []string
			add := func(file string, objs []waveObject, bodies ...string) {
				waves = append(waves, objs)
				docs = append(docs, file+"\x00"+strings.Join(bodies, "\n---\n"))
			}
			cms := func(ns, prefix string, n int) ([]waveObject, []string) {
				var objs []waveObject
				var bodies []string
				for i := range n {
					name := fmt.Sprintf("%s-%02d", prefix, i)
					objs = append(objs, waveObject{"configmaps", ns, name})
					bodies = append(bodies, configMap(ns, name, "x"))
				}
				return objs, bodies
			}
			before, beforeDocs := cms(ledgerNS, "before", 8)
			add("0000_50_waves_01_before.yaml", before, beforeDocs...)
			add("0000_50_waves_02_namespace.yaml", []waveObject{{"namespaces", "", target}}, `
apiVersion: v1
kind: Namespace
metadata:
  name: `+target+`
  annotations:
    `+include+`
`)
			add("0000_50_waves_03_crd.yaml", []waveObject{{"customresourcedefinitions", "", "gizmos." + group}}, crd(group, "gizmos", "Gizmo"))
			inside, insideDocs := cms(target, "inside", 8)
			add("0000_50_waves_04_inside.yaml", inside, insideDocs...)
			add("0000_50_waves_05_gizmo.yaml", []waveObject{{"gizmos", target, "main"}}, customResource(group, "Gizmo", target, "main"))
			after, afterDocs := cms(target, "after", 4)
			add("0000_50_waves_06_after.yaml", after, afterDocs...)

			files := map[string]string{}
			for _, d := range docs {
				file, body, _ := strings.Cut(d, "\x00")
				files[file] = body
			}
			rel := load(t, writePayload(t, "1.0.0", files))
			mark := auditMark(t)
			requireComplete(t, sync(t, e, rel, mode))

			// Everything landed.
			for _, o := range inside {
				if c.get(t, configMapGVK, target, o.name) == nil {
					t.Errorf("ConfigMap %s/%s, which needs the namespace, is missing", target, o.name)
				}
			}
			gizmo := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gizmo"}
			if c.get(t, gizmo, target, "main") == nil {
				t.Error("the Gizmo, which needs the CRD, is missing")
			}

			// Each object was written once and accepted at once: nothing
			// raced its namespace or CRD. Each wave's writes were all received
			// before any of the next wave's.
			index := map[waveObject]int{}
			total := 0
			for w, objs := range waves {
				for _, o := range objs {
					index[o] = w
					total++
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			events, err := testCluster.WaitForAudit(ctx, mark, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: cluster.ApplierUser, WritesOnly: true}, total)
			if err != nil {
				t.Fatal(err)
			}
			lastReceived := make([]time.Time, len(waves))
			firstReceived := make([]time.Time, len(waves))
			writes := 0
			for _, ev := range events {
				if ev.ObjectRef == nil {
					continue
				}
				w, ours := index[waveObject{ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}]
				if !ours {
					continue
				}
				writes++
				if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
					t.Errorf("refused write: %s: %d %s", ev, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
				}
				at := ev.RequestReceivedTimestamp
				if firstReceived[w].IsZero() || at.Before(firstReceived[w]) {
					firstReceived[w] = at
				}
				if at.After(lastReceived[w]) {
					lastReceived[w] = at
				}
			}
			if writes != total {
				t.Errorf("%d writes to the payload's %d objects, want one each", writes, total)
			}
			for w := 1; w < len(waves); w++ {
				if firstReceived[w].Before(lastReceived[w-1]) {
					t.Errorf("wave %d (%s…) started at %s, before wave %d's last write at %s",
						w+1, waves[w][0].name, firstReceived[w].Format(time.RFC3339Nano), w, lastReceived[w-1].Format(time.RFC3339Nano))
				}
			}
		})
	}
}
