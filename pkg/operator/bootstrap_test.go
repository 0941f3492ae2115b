package operator

import (
	"context"
	"testing"
	"time"

	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/manifests"
	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// While the apiserver would hold a POST of the ClusterVersion, its CRD
// Established less than 2 s ago, bootstrap creates it by server-side
// apply; later, by a POST.
func TestBootstrapCreatesTheClusterVersionByApplyWhileItsCRDIsNew(t *testing.T) {
	for name, age := range map[string]time.Duration{"new CRD": time.Second, "older CRD": 10 * time.Second} {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
			clock := clocktesting.NewFakeClock(now)
			crds, err := manifests.CRDs()
			if err != nil {
				t.Fatal(err)
			}
			var objs []runtime.Object
			for _, crd := range crds {
				crd = crd.DeepCopy()
				_ = unstructured.SetNestedSlice(crd.Object, []interface{}{map[string]interface{}{
					"type": "Established", "status": "True", "lastTransitionTime": now.Add(-age).Format(time.RFC3339),
				}}, "status", "conditions")
				objs = append(objs, crd)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{payload.CRDGVR: "CustomResourceDefinitionList", clusterVersionsResource: "ClusterVersionList"}, objs...)
			var applied []byte
			dyn.PrependReactor("patch", "clusterversions", func(a clienttesting.Action) (bool, runtime.Object, error) {
				pa := a.(clienttesting.PatchActionImpl)
				if pa.PatchType != types.ApplyPatchType {
					t.Errorf("patch %s; want a server-side apply", pa.PatchType)
				}
				applied = pa.Patch
				obj := &unstructured.Unstructured{}
				return true, obj, obj.UnmarshalJSON(pa.Patch)
			})
			cfg := configfake.NewSimpleClientset()
			engine, err := apply.New(apply.Config{Dynamic: dyn, Mapper: staticMapper{nil}, Ledger: &deletion.MemoryStore{}})
			if err != nil {
				t.Fatal(err)
			}
			op, err := New(Config{KubeClient: kubefake.NewClientset(), ConfigClient: cfg, DynamicClient: dyn, Engine: engine, Clock: clock,
				Recorder: record.NewFakeRecorder(10), Releases: LoadedRelease{Release: &payload.Release{Version: "1.0.0"}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Bootstrap(context.Background()); err != nil {
				t.Fatal(err)
			}
			posted := false
			for _, a := range cfg.Actions() {
				posted = posted || (a.GetVerb() == "create" && a.GetResource().Resource == "clusterversions")
			}
			if held := age < 2*time.Second; held {
				if posted || applied == nil {
					t.Errorf("posted %v, applied %s; want an apply and no POST", posted, applied)
				}
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(applied); err != nil || obj.GetName() != "version" {
					t.Errorf("applied %s (%v)", applied, err)
				}
				if id, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterID"); id == "" {
					t.Errorf("applied %s without a cluster ID", applied)
				}
			} else if !posted || applied != nil {
				t.Errorf("posted %v, applied %s; want a POST", posted, applied)
			}
		})
	}
}
