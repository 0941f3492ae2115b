package e2e

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

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
// the second release marks for deletion that existed, and nothing else.
func TestDeletesExactlyWhatTheUpdateMarks(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for pair := 0; pair < *safetyPairs; pair++ {
		t.Run(fmt.Sprintf("pair %d", pair), func(t *testing.T) {
			c := newClients(t)
			ns := testCluster.CreateNamespace(t)
			e := newEngine(t, c, ns)
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
			requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", v1)), graph.ModeInstall))
			rel2 := load(t, writePayload(t, "1.0.1", v2))
			mark := auditMark(t)
			res := sync(t, e, rel2, graph.ModeUpdate)
			for i := 0; i < 5 && len(res.Deletes.InProgress) > 0; i++ {
				res = sync(t, e, rel2, graph.ModeReconcile)
			}
			requireComplete(t, res)

			var want, got []string
			for name := range marked {
				if created[name] {
					want = append(want, name)
				}
			}
			for name, n := range adminDeletes(t, mark) {
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
				exists := c.get(t, configMapGVK, ns, name) != nil || c.get(t, secretGVK, ns, name) != nil
				if exists == marked[name] {
					t.Errorf("%s exists=%v but marked=%v (seed %d)", name, exists, marked[name], seed)
				}
			}
		})
	}
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
