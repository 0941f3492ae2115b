package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

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
