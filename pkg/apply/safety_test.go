package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestCheckDeletable(t *testing.T) {
	e := &Engine{protected: DefaultSelf().Protected()}
	target := deleteManifest("ConfigMap", "ns", "x")
	kept := deleteManifest("ConfigMap", "ns", "kept")
	kept.Obj.SetAnnotations(nil)
	rel := &payload.Release{Version: "2", Manifests: []*payload.Manifest{target, kept,
		deleteManifest("Namespace", "", "kube-system")}}
	tests := []struct {
		name string
		id   payload.ObjectID
		want string
	}{
		{"the object a delete manifest names may be deleted", target.ID(), ""},
		{"an object only created by the payload is refused", kept.ID(), "no delete manifest"},
		{"an object the payload never names is refused", payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "other"}, "no delete manifest"},
		{"a same-named object in another namespace is refused", payload.ObjectID{Kind: "ConfigMap", Namespace: "other", Name: "x"}, "no delete manifest"},
		{"kube-system is refused even when marked", payload.ObjectID{Kind: "Namespace", Name: "kube-system"}, "protected namespace"},
		{"the applier's namespace is refused", payload.ObjectID{Kind: "Namespace", Name: "openshift-cluster-version"}, "protected namespace"},
		{"the applier's deployment is refused", payload.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "openshift-cluster-version", Name: "cluster-version-operator"}, "own Deployment"},
		{"the ClusterVersion CRD is refused", payload.ObjectID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "clusterversions.config.openshift.io"}, "CustomResourceDefinition"},
		{"kube-system is refused under a stray namespace, which its DELETE ignores", payload.ObjectID{Kind: "Namespace", Namespace: "anything", Name: "kube-system"}, "protected namespace"},
		{"the ClusterVersion is refused under a stray namespace", payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterVersion", Namespace: "ns", Name: "version"}, "ClusterVersion the applier reports on"},
		{"the ClusterOperator CRD is refused under a stray namespace", payload.ObjectID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Namespace: "ns", Name: "clusteroperators.config.openshift.io"}, "CustomResourceDefinition"},
		{"kube-node-lease is refused", payload.ObjectID{Kind: "Namespace", Name: "kube-node-lease"}, "protected namespace"},
		{"the applier's ServiceAccount is refused", payload.ObjectID{Kind: "ServiceAccount", Namespace: "openshift-cluster-version", Name: "cluster-version-operator"}, "own ServiceAccount"},
		{"the applier's Role is refused", payload.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "Role", Namespace: "openshift-cluster-version", Name: "cluster-version-operator"}, "own Role"},
		{"the applier's RoleBinding is refused", payload.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding", Namespace: "openshift-cluster-version", Name: "cluster-version-operator"}, "own RoleBinding"},
		{"the applier's ClusterRoleBinding is refused", payload.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: "cluster-version-operator"}, "own ClusterRoleBinding"},
		{"the applier's Lease is refused", payload.ObjectID{Group: "coordination.k8s.io", Kind: "Lease", Namespace: "openshift-cluster-version", Name: "payload-applier"}, "Lease"},
		{"the applier's payload store is refused", payload.ObjectID{Kind: "PersistentVolumeClaim", Namespace: "openshift-cluster-version", Name: "payload-applier-payloads"}, "payload store"},
		{"a Project named like a protected namespace is refused", payload.ObjectID{Group: "project.openshift.io", Kind: "Project", Name: "default"}, "protected namespace"},
		{"the applier's deployment is refused in its own namespace only", payload.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "elsewhere", Name: "cluster-version-operator"}, "no delete manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pass{e: e, rel: rel, marked: markedFor(rel, (*payload.Manifest).ID)}
			err := p.admit(deleteRequest{id: tt.id})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected refusal: %v", err)
				}
				return
			}
			var te *TaskError
			if !errors.As(err, &te) || te.Reason != ReasonDeletionRefused || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want a %s refusal mentioning %q, got %v", ReasonDeletionRefused, tt.want, err)
			}
		})
	}
}

// TestTheApplierRefusesToDeleteItself marks every object of the applier's
// own payload (manifests/) for deletion: each is refused but the metrics
// Service, whose loss only hides metrics.
func TestTheApplierRefusesToDeleteItself(t *testing.T) {
	rel, err := payload.Load("../../manifests", payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{protected: DefaultSelf().Protected()}
	marked := map[payload.ObjectID]bool{}
	for _, m := range rel.Manifests {
		marked[m.ID()] = true
	}
	p := &pass{e: e, rel: rel, marked: marked}
	for _, m := range rel.Manifests {
		err := p.admit(deleteRequest{id: m.ID()})
		if m.GVK.Kind == "Service" {
			if err != nil {
				t.Errorf("%s: %v", m.ID(), err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s (%s) could be deleted", m.ID(), m.Position())
		}
	}
}

// TestScopeComesFromTheAPI: a namespace that a delete manifest sets on a
// cluster-scoped kind is dropped from the object's identity, so that the
// ledger, the marked set and the safety gate agree with the DELETE.
func TestScopeComesFromTheAPI(t *testing.T) {
	rel := planRelease(t,
		planDoc{"0000_50_c_01_old.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-old\n  namespace: stray\n  annotations:\n    " + deleteAnn + "\n"},
		planDoc{"0000_50_c_02_sys.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n  namespace: stray\n  annotations:\n    " + deleteAnn + "\n"})
	rel.Version = "2"
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{namespaces: "NamespaceList"},
		unstructuredOf("v1", "Namespace", "", "openshift-old"), unstructuredOf("v1", "Namespace", "", "kube-system"))
	store := &deletion.MemoryStore{}
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: store})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate, DeleteSettle: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Tracker().Get(namespaces, "", "kube-system"); err != nil {
		t.Fatal("kube-system must stay")
	}
	if res.Objects[1].Action != ActionRefused {
		t.Errorf("kube-system was %s, want refused", res.Objects[1].Action)
	}
	if _, err := dyn.Tracker().Get(namespaces, "", "openshift-old"); err == nil {
		t.Error("openshift-old must be deleted")
	}
	recs, _ := store.Load(context.Background())
	for _, r := range recs {
		if r.ID.Namespace != "" {
			t.Errorf("the ledger keeps %s with the manifest's stray namespace", r.ID)
		}
	}
	if len(recs) != 2 {
		t.Errorf("%d records, want 2", len(recs))
	}
}
