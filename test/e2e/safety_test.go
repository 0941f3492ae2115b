package e2e

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

var safetyPairs = flag.Int("safety-pairs", 8, "random release pairs for TestDeletesExactlyWhatTheUpdateMarks")

func secret(ns, name string, del bool) string {
	s := fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
  annotations:
    %s
stringData:
  k: v
`, name, ns, include)
	if del {
		s = withDelete(s)
	}
	return s
}

// TestDeletesExactlyWhatTheUpdateMarks applies random release pairs and
// checks, from the audit log, that the objects deleted are exactly the ones
// the second release marks for deletion that existed, and nothing else,
// with the one widening on purpose: when the second release removes the
// widgets component, its CRD says operand-cleanup: Supported and the
// policy is Delete, the Widgets in the CRD's scope go too.
func TestDeletesExactlyWhatTheUpdateMarks(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for pair := 0; pair < *safetyPairs; pair++ {
		t.Run(fmt.Sprintf("pair %d", pair), func(t *testing.T) {
			c := newClients(t)
			ns := testCluster.CreateNamespace(t)
			e := newEngine(t, ns)
			const pool = 12
			v1, v2 := map[string]string{}, map[string]string{}
			created := map[string]bool{}
			marked := map[string]bool{}
			for i := 0; i < pool; i++ {
				name := fmt.Sprintf("obj-%02d", i)
				file := fmt.Sprintf("0000_%02d_comp-%d_%02d_%s.yaml", 10*(1+rng.Intn(3)), rng.Intn(3), i, name)
				asSecret := rng.Intn(2) == 0
				if rng.Intn(3) > 0 {
					v1[file] = manifestFor(asSecret, ns, name, false)
					created[name] = true
				}
				switch rng.Intn(3) {
				case 0: // dropped from v2: must be left alone
				case 1:
					v2[file] = manifestFor(asSecret, ns, name, false)
				case 2:
					v2[file] = manifestFor(asSecret, ns, name, true)
					marked[name] = true
				}
			}
			if len(v1) == 0 {
				v1["0000_10_comp-0_99_filler.yaml"] = configMap(ns, "filler", "x")
				created["filler"] = true
			}

			// The widgets component: an operator, a CRD and four Widgets,
			// one of them in another namespace.
			w := newWidgetComponent(t, ns)
			other := testCluster.CreateNamespace(t)
			v1["0000_50_widgets_00_crd.yaml"], v1["0000_50_widgets_10_operator.yaml"] = w.crdManifest(), w.operatorManifest()
			removed, supported, allNamespaces := rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0
			policy := []cleanup.Policy{cleanup.PolicyDelete, cleanup.PolicyOrphan}[rng.Intn(2)]
			if pair == 0 {
				// Every run exercises the widened rule at least once.
				removed, supported, policy = true, true, cleanup.PolicyDelete
			}
			t.Logf("widgets removed=%v supported=%v all-namespaces=%v policy=%s", removed, supported, allNamespaces, policy)
			if removed {
				ann := []string{deleteAnn}
				if supported {
					ann = append(ann, supportedAnn)
				}
				if !allNamespaces {
					ann = append(ann, fmt.Sprintf("release.openshift.io/operand-namespaces: %q", ns))
				}
				v2["0000_50_widgets_00_crd.yaml"], v2["0000_50_widgets_10_operator.yaml"] = w.crdManifest(ann...), w.operatorManifest(deleteAnn)
				marked[w.crd], marked["widget-operator"] = true, true
			} else {
				v2["0000_50_widgets_00_crd.yaml"], v2["0000_50_widgets_10_operator.yaml"] = w.crdManifest(), w.operatorManifest()
			}
			created[w.crd], created["widget-operator"] = true, true

			requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", v1)), graph.ModeInstall))
			for i := range 3 {
				w.createWidget(t, c, ns, fmt.Sprintf("op-%d", i), false)
			}
			w.createWidget(t, c, other, "op-out", false)
			rel2 := load(t, writePayload(t, "1.0.1", v2))
			mark := auditMark(t)
			opts := fastOptions(graph.ModeUpdate)
			opts.OperandCleanup = policy
			res, err := e.Sync(context.Background(), rel2, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Mode = graph.ModeReconcile
			for i := 0; i < 8 && (len(res.Deletes.InProgress) > 0 || cleanupOpen(res.Cleanups)); i++ {
				if res, err = e.Sync(context.Background(), rel2, opts); err != nil {
					t.Fatal(err)
				}
			}
			requireComplete(t, res)

			var want, got []string
			for name := range marked {
				if created[name] {
					want = append(want, name)
				}
			}
			if removed && supported && policy == cleanup.PolicyDelete {
				want = append(want, "op-0", "op-1", "op-2")
				if allNamespaces {
					want = append(want, "op-out")
				}
			}
			for name, n := range applierDeletes(t, mark) {
				if n != 1 {
					t.Errorf("%s received %d DELETE requests", name, n)
				}
				got = append(got, name)
			}
			sort.Strings(want)
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("deleted %v, want exactly %v (seed %d)", got, want, seed)
			}
			for name := range created {
				if name == w.crd || name == "widget-operator" {
					continue
				}
				exists := c.get(t, configMapGVK, ns, name) != nil || c.get(t, secretGVK, ns, name) != nil
				if exists == marked[name] {
					t.Errorf("%s exists=%v but marked=%v (seed %d)", name, exists, marked[name], seed)
				}
			}
		})
	}
}

func cleanupOpen(recs []cleanup.Record) bool {
	for _, r := range recs {
		if r.State.Open() {
			return true
		}
	}
	return false
}

func manifestFor(asSecret bool, ns, name string, del bool) string {
	if asSecret {
		return secret(ns, name, del)
	}
	s := configMap(ns, name, "v")
	if del {
		s = withDelete(s)
	}
	return s
}
