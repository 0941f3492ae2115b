package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// countingMapper counts discovery refreshes.
type countingMapper struct {
	meta.RESTMapper
	resets int
}

func (c *countingMapper) Reset() { c.resets++ }

func TestAnEstablishedCRDsKindsResolveWithoutDiscovery(t *testing.T) {
	disc := &countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}
	m := newMapper(disc, clock.RealClock{})
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	if _, err := m.known(widget, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("before the CRD: %v, want NoMatch", err)
	}
	if !m.learn(liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1")) {
		t.Fatal("a complete CRD was not learned")
	}
	for _, version := range []string{"v1", ""} {
		got, err := m.mapping(widget.WithVersion(version))
		if err != nil || got.Resource.Resource != "widgets" || got.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Errorf("version %q: %+v, %v; want widgets, namespaced", version, got, err)
		}
	}
	if disc.resets != 0 {
		t.Errorf("%d discovery refreshes, want none", disc.resets)
	}
	// The next pass reads what discovery serves, CRDs deleted since
	// included.
	m.forget()
	if _, err := m.mapping(widget.WithVersion("v1")); !meta.IsNoMatchError(err) || disc.resets != 1 {
		t.Errorf("after a refresh: %v with %d refreshes, want NoMatch after one", err, disc.resets)
	}
}

func TestTheLearnedKindsGuessNoPreferredVersion(t *testing.T) {
	m := newMapper(&countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}, clock.RealClock{})
	m.learn(liveCRD("gadgets.example.com", "example.com", "gadgets", "Gadget", "Cluster", "v1beta1", "v1"))
	gadget := schema.GroupKind{Group: "example.com", Kind: "Gadget"}
	if got, err := m.known(gadget, "v1beta1"); err != nil || got.Scope.Name() != meta.RESTScopeNameRoot {
		t.Errorf("v1beta1: %+v, %v; want cluster-scoped", got, err)
	}
	if _, err := m.known(gadget, ""); !meta.IsNoMatchError(err) {
		t.Errorf("preferred version of two: %v, want NoMatch, left to discovery", err)
	}
}

func TestACRDThatDoesNotSayItsKindsIsLeftToDiscovery(t *testing.T) {
	m := newMapper(&countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}, clock.RealClock{})
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "", "v1")
	if m.learn(crd) {
		t.Error("a CRD without a scope was learned")
	}
}

func TestAKindsArrivalClosesWhenACRDServingItIsLearned(t *testing.T) {
	m := newMapper(&countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}, clock.RealClock{})
	v1 := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	v2 := v1.GroupKind().WithVersion("v2")
	a1, a2 := m.arrival(v1), m.arrival(v2)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if closed(a1) || closed(a2) {
		t.Fatal("an arrival closed before any CRD")
	}
	m.learn(liveCRD("gadgets.example.com", "example.com", "gadgets", "Gadget", "Cluster", "v1"))
	if closed(a1) {
		t.Error("another kind's CRD closed the Widget's arrival")
	}
	m.learn(liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1"))
	if !closed(a1) || closed(a2) {
		t.Errorf("a CRD serving Widget v1: v1 closed %v, v2 closed %v; want v1 only", closed(a1), closed(a2))
	}
	if !closed(m.arrival(v1)) {
		t.Error("the arrival of a kind learned already is not closed")
	}
	m.invalidate()
	if !closed(a2) {
		t.Error("stale discovery left a task waiting for a kind a refresh may find")
	}
}
