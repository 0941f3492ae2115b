package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// widgetsCRD is a CRD manifest for widgets.example.com serving versions.
func widgetsCRD(name string, versions ...string) planDoc {
	doc := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\nspec:\n  group: example.com\n  scope: Namespaced\n" +
		"  names: {kind: Widget, plural: widgets}\n  versions:\n"
	for i, v := range versions {
		storage := "false"
		if i == 0 {
			storage = "true"
		}
		doc += "  - {name: " + v + ", served: true, storage: " + storage + ", schema: {openAPIV3Schema: {type: object}}}\n"
	}
	return planDoc{"0000_50_widgets_00_crd.yaml", doc}
}

func TestCRDCompatibilityJudgesOnlyCRDsTheClusterHas(t *testing.T) {
	c := newOperandCluster(t, true)
	rel := planRelease(t, widgetsCRD("widgets.example.com", "v2"),
		planDoc{"0000_50_gadgets_00_crd.yaml", widgetsCRD("gadgets.example.com", "v1").yaml})
	findings := c.engine.CRDCompatibility(context.Background(), rel)
	if len(findings) != 1 || findings[0].CRD != "widgets.example.com" || findings[0].Rule != crdcompat.StoredVersionRemoved || findings[0].Version != "v1" {
		// The live CRD stores v1: the apiserver's defaulting, which Decode
		// applies too, lists the storage version in status.storedVersions.
		t.Fatalf("findings %+v, want widgets' stored v1 removed and nothing for the CRD the cluster lacks", findings)
	}
	if got := c.engine.CRDCompatibility(context.Background(), planRelease(t, widgetsCRD("widgets.example.com", "v1", "v2"))); len(got) != 0 {
		t.Fatalf("adding a version: %+v, want no finding", got)
	}
}

func TestABlockedCRDUpdateFailsItsTaskAndWritesNothing(t *testing.T) {
	c := newOperandCluster(t, true)
	rel := planRelease(t, widgetsCRD("widgets.example.com", "v2"))
	before := len(c.dyn.Actions())
	res, err := c.engine.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate, Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var te *TaskError
	if len(res.Errors) != 1 || !errors.As(res.Errors[0], &te) || te.Reason != ReasonCRDUpdateBlocked {
		t.Fatalf("errors %+v, want one %s", res.Errors, ReasonCRDUpdateBlocked)
	}
	for _, a := range c.dyn.Actions()[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("a blocked CRD update wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// requiredSpecCRD is widgets.example.com serving v1 with a schema that
// requires spec, which none of newOperandCluster's Widgets has.
func requiredSpecCRD() planDoc {
	return planDoc{"0000_50_widgets_00_crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" +
		"spec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions:\n" +
		"  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, required: [spec], properties: {spec: {type: object}}}}}\n"}
}

func TestPlanNotesCRDsFromTheAcceptanceChecks(t *testing.T) {
	c := newOperandCluster(t, true)
	lists := 0
	c.dyn.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists++
		return false, nil, nil
	})
	c.dyn.PrependReactor("patch", "*", answerApplyPatches)
	rel := planRelease(t, requiredSpecCRD(), planDoc{"0000_50_gadgets_00_crd.yaml", widgetsCRD("gadgets.example.com", "v1").yaml})
	ctx := context.Background()

	checks := c.engine.CheckCRDs(ctx, rel)
	if lists != 1 {
		t.Fatalf("CheckCRDs listed the Widgets %d times, want once", lists)
	}
	if f, ok := checks.Of("widgets.example.com"); !ok || len(f) != 1 || f[0].Rule != crdcompat.ExistingObjectsInvalid || f[0].Count != 3 {
		t.Fatalf("widgets: judged %v, findings %+v; want the three Widgets without spec", ok, f)
	}
	if f, ok := checks.Of("gadgets.example.com"); ok || f != nil {
		t.Errorf("gadgets, which the cluster lacks, was judged: %+v", f)
	}
	if _, ok := (*CRDChecks)(nil).Of("widgets.example.com"); ok {
		t.Error("nil checks judged a CRD")
	}

	p, err := c.engine.Plan(ctx, rel, PlanOptions{CRDChecks: checks})
	if err != nil {
		t.Fatal(err)
	}
	if lists != 1 {
		t.Errorf("a plan given the checks listed the Widgets again: %d lists in all", lists)
	}
	alone, err := c.engine.Plan(ctx, rel, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lists != 2 {
		t.Errorf("a plan without checks must judge the CRD itself: %d lists in all, want 2", lists)
	}
	got, want := p.Actions[0], alone.Actions[0]
	if got.Action != ActionConfigured || got.Reason != want.Reason || !strings.Contains(got.Reason, "blocked ("+string(ReasonCRDUpdateBlocked)+")") {
		t.Errorf("note from the checks: %s %q\nnote judged by the plan: %s %q", got.Action, got.Reason, want.Action, want.Reason)
	}
}
