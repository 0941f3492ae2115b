package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/graph"
)

// As the CVO precreates them: a component's ClusterOperator exists, with
// its manifest's relatedObjects, before the component's other manifests
// are applied, however late its own manifest comes.
func TestAClusterOperatorIsCreatedBeforeItsComponentsOtherManifests(t *testing.T) {
	rel := planRelease(t,
		planDoc{"0000_50_widgets_00_cm.yaml", cmYAML("first", "v")},
		planDoc{"0000_50_widgets_99_clusteroperator.yaml", "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: widgets\nstatus:\n  versions:\n  - name: operator\n    version: 1.0.0\n  relatedObjects:\n  - group: \"\"\n    resource: namespaces\n    name: widgets\n  - group: \"\"\n    resource: nodes\n"})
	c := newOperandClusterOf(t, true)
	var writes []string
	c.dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create", "update", "patch":
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
		return false, nil, nil
	})
	c.pass(t, rel, graph.ModeInstall)
	if len(writes) < 3 || writes[0] != "create clusteroperators/" || writes[1] != "update clusteroperators/status" || writes[2] != "create configmaps/" {
		t.Fatalf("writes %v: want the ClusterOperator created and its status set before the ConfigMap", writes)
	}
	co, err := c.dyn.Tracker().Get(clusterOperatorGVR, "", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	related, _, _ := unstructured.NestedSlice(co.(*unstructured.Unstructured).Object, "status", "relatedObjects")
	if len(related) != 2 {
		t.Fatalf("relatedObjects %v, want the manifest's", related)
	}
	// The schema requires a name; a whole resource's is empty, as the
	// CVO's typed client writes it (the real payload has such entries).
	if name, ok := related[1].(map[string]interface{})["name"]; !ok || name != "" {
		t.Errorf("relatedObjects[1] %v: want name \"\"", related[1])
	}

	// Known to the engine, it is not created again; a reconcile never precreates.
	writes = nil
	c.pass(t, rel, graph.ModeUpdate)
	c.pass(t, rel, graph.ModeReconcile)
	for _, w := range writes {
		if w == "create clusteroperators/" {
			t.Errorf("writes %v: a known ClusterOperator was created again", writes)
		}
	}
	fresh := newOperandClusterOf(t, true)
	var creates int
	fresh.dyn.PrependReactor("create", "clusteroperators", func(clienttesting.Action) (bool, runtime.Object, error) {
		creates++
		return false, nil, nil
	})
	fresh.pass(t, rel, graph.ModeReconcile)
	if creates != 1 {
		t.Errorf("%d creates in a reconcile: want only the ClusterOperator's own task's", creates)
	}
}
