package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ocpReal is the real OpenShift 4.20 payload shipped beside the checkout.
var ocpReal = filepath.Join("..", "..", "..", "shared", "payloads", "ocp-real")

// TestRealPayloadInstallsCompletely installs ocp-real. No operator runs here
// to report its ClusterOperator Available, so the test plays every operator
// once the first pass has created them; the next pass must then complete.
func TestRealPayloadInstallsCompletely(t *testing.T) {
	if _, err := os.Stat(ocpReal); err != nil {
		t.Skipf("real payload not available: %v", err)
	}
	c := newClients(t)
	ledgerNS := testCluster.CreateNamespace(t)
	e := newEngine(t, ledgerNS)
	rel := load(t, ocpReal)
	createMissingNamespaces(t, c, rel)

	// Install runs everything in parallel, so a custom resource can race its
	// CRD; passes repeat until only operator health remains, as the CVO's do.
	res := sync(t, e, rel, graph.ModeInstall)
	for pass := 2; pass <= 5 && len(unexpectedErrors(res)) > 0; pass++ {
		res = sync(t, e, rel, graph.ModeInstall)
	}
	if errs := unexpectedErrors(res); len(errs) > 0 {
		for _, err := range errs {
			t.Errorf("%v", err)
		}
		t.Fatalf("%d manifests of %d failed", len(errs), res.Total)
	}
	operators := 0
	for _, m := range rel.Manifests {
		if m.GVK.Kind == "ClusterOperator" && !m.Delete() {
			version := ""
			if vs, _, _ := unstructured.NestedSlice(m.Obj.Object, "status", "versions"); len(vs) > 0 {
				version, _, _ = unstructured.NestedString(vs[0].(map[string]interface{}), "version")
			}
			markAvailable(t, m.Obj.GetName(), version)
			operators++
		}
	}
	res = sync(t, e, rel, graph.ModeInstall)
	requireComplete(t, res)
	t.Logf("%d of %d manifests applied, %d ClusterOperators reported Available by the test", res.Done, res.Total, operators)
	for _, o := range res.Objects {
		if !o.Delete && o.Action == apply.ActionNotRun {
			t.Errorf("%s was never applied", o.ID)
		}
	}
}

// unexpectedErrors drops the ClusterOperator health failures that only a
// running operator could clear.
func unexpectedErrors(res *apply.SyncResult) []error {
	var out []error
	for _, err := range res.Errors {
		var te *apply.TaskError
		if errors.As(err, &te) && te.Subject.Kind == "ClusterOperator" && te.Reason == apply.ReasonCONotAvailable {
			continue
		}
		out = append(out, err)
	}
	return out
}

// createMissingNamespaces creates the namespaces that manifests use but that
// the corpus does not create: in a real release, files without a 0000_ name
// (left out of ocp-real, see its README) or other components create them.
func createMissingNamespaces(t *testing.T, c *clients, rel *payload.Release) {
	t.Helper()
	created := map[string]bool{}
	for _, m := range rel.Manifests {
		if m.GVK.Kind == "Namespace" && m.GVK.Group == "" {
			created[m.Obj.GetName()] = true
		}
	}
	for _, m := range rel.Manifests {
		ns := m.Obj.GetNamespace()
		if ns == "" || created[ns] {
			continue
		}
		created[ns] = true
		_, err := c.kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Logf("created namespace %s, which the corpus uses but does not create", ns)
	}
}
