package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/cluster"
	"github.com/payload-applier/payload-applier/test/cluster/cmd/localcluster/story"
)

var examplesDir = filepath.Join("..", "..", "examples", "payloads")

// lintExample loads an example release as `payload-applier lint` does and
// returns its findings, against previous when it is set.
func lintExample(t *testing.T, version, previous string) (*payload.Release, []payload.Finding) {
	t.Helper()
	opts := payload.DefaultLoadOptions()
	all, findings, err := payload.LoadAll(filepath.Join(examplesDir, version))
	if err != nil {
		t.Fatal(err)
	}
	var lintOpts payload.LintOptions
	if previous != "" {
		prev, _, err := payload.LoadAll(filepath.Join(examplesDir, previous))
		if err != nil {
			t.Fatal(err)
		}
		lintOpts.Previous = prev.Filter(opts)
	}
	rel := all.Filter(opts)
	return rel, append(findings, payload.Lint(rel, lintOpts)...)
}

func TestExamplesLintCleanly(t *testing.T) {
	tests := map[string]struct{ version, previous string }{
		"1.0.0 on its own":              {"1.0.0", ""},
		"1.0.1 on its own":              {"1.0.1", ""},
		"1.1.0 on its own":              {"1.1.0", ""},
		"1.0.1 as an update from 1.0.0": {"1.0.1", "1.0.0"},
		"1.1.0 as an update from 1.0.1": {"1.1.0", "1.0.1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rel, findings := lintExample(t, tc.version, tc.previous)
			for _, f := range findings {
				// 1.0.1 removes the gadget component, its namespace and its
				// CRD: lint rightly warns that they take their contents.
				if f.Rule == payload.RuleDestructiveDelete && strings.Contains(f.File, "/1.0.1/0000_50_gadget_") {
					continue
				}
				t.Errorf("%s", f)
			}
			if rel.Version != tc.version {
				t.Errorf("release-metadata says %s, the directory %s", rel.Version, tc.version)
			}
			if len(rel.Skipped) > 0 {
				t.Errorf("%d manifests are skipped for the default profile, the first %s: %s",
					len(rel.Skipped), rel.Skipped[0].Manifest.Position(), rel.Skipped[0].Reason)
			}
		})
	}
}

// TestExamplesTellTheDocumentedStory checks the releases hold what the demo
// and docs/operations.md say: 1.0.1 deletes exactly the gadget objects of
// 1.0.0, ClusterOperator first and namespace last; 1.1.0 deletes nothing.
func TestExamplesTellTheDocumentedStory(t *testing.T) {
	v100, _ := lintExample(t, "1.0.0", "")
	v101, _ := lintExample(t, "1.0.1", "")
	v110, _ := lintExample(t, "1.1.0", "")

	var gadgetCreates, gadgetDeletes []string
	for _, m := range v100.Manifests {
		if m.Component == "gadget" {
			gadgetCreates = append(gadgetCreates, m.ID().String())
		}
		if m.ID().Kind == "Gadget" && !slices.Contains(m.Obj.GetFinalizers(), "example.com/cleanup") {
			t.Errorf("the Gadget of 1.0.0 lacks the example.com/cleanup finalizer the demo relies on")
		}
	}
	for _, m := range v101.Manifests {
		if m.Component == "gadget" && !m.Delete() {
			t.Errorf("1.0.1 still creates %s", m.ID())
		}
		if m.Delete() {
			gadgetDeletes = append(gadgetDeletes, m.ID().String())
		}
	}
	slices.Sort(gadgetCreates)
	slices.Sort(gadgetDeletes)
	if !slices.Equal(gadgetCreates, gadgetDeletes) {
		t.Errorf("1.0.1 deletes\n  %v\nbut 1.0.0's gadget component is\n  %v", gadgetDeletes, gadgetCreates)
	}
	for _, m := range v110.Manifests {
		if m.Delete() {
			t.Errorf("1.1.0 carries the delete manifest %s; it must not repeat 1.0.1's", m.Position())
		}
	}

	walk := graph.BuildDeletes(apply.Tasks(v101), graph.BuildOptions{})
	if len(walk.Nodes) != 1 {
		t.Fatalf("the delete walk of 1.0.1 has %d nodes, want one chain for the gadget component", len(walk.Nodes))
	}
	var order []string
	for _, task := range walk.Nodes[0].Tasks {
		order = append(order, task.Name)
	}
	if first, last := order[0], order[len(order)-1]; first != "ClusterOperator.config.openshift.io/gadget" || last != "Namespace/gadget" {
		t.Errorf("delete order %v: want the ClusterOperator first and the namespace last", order)
	}
}

// TestExamplesStory runs the `make run` story against a control plane of
// its own: the examples use fixed names (ClusterVersion version, namespace
// gadget, CRD gadgets.example.com) that other tests in this package share.
// The releases are published as signed images to an in-process registry by
// the real CLI, and the operator is the real CLI, started as
// `payload-applier start --release-cache`; after each step the test checks
// the cluster itself, not the story's word.
func TestExamplesStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatalf("start a control plane for the story: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the story's control plane: %v", err)
		}
	})
	root, err := story.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(t.TempDir(), "payload-applier")
	if err := story.BuildCLI(ctx, root, cli); err != nil {
		t.Fatal(err)
	}

	releasesDir := t.TempDir()
	reg, err := story.StartRegistry(filepath.Join(releasesDir, "signature-store"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Errorf("stop the registry: %v", err)
		}
	})
	var published bytes.Buffer
	releases, err := story.Publish(ctx, story.PublishOptions{CLI: cli, Payloads: filepath.Join(root, "examples", "payloads"), Dir: releasesDir, Registry: reg, Out: &published})
	if err != nil {
		t.Fatalf("publish the releases: %v\n%s", err, published.String())
	}
	if err := releases.ApplySignatures(ctx, c.Kubeconfig(), &published); err != nil {
		t.Fatal(err)
	}

	t.Run("without an operator the story stops with a clear message", func(t *testing.T) {
		err := story.Run(ctx, story.Options{Kubeconfig: c.Kubeconfig(), CLI: cli, Releases: releases, StepTimeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "timed out after 2s waiting for the operator to create and report on ClusterVersion version") {
			t.Fatalf("story.Run without an operator returned %v", err)
		}
	})

	op, err := story.StartOperator(ctx, story.OperatorOptions{
		CLI: cli, Kubeconfig: c.ApplierKubeconfig(), ReleaseCache: filepath.Join(t.TempDir(), "release-cache"),
		LogPath: filepath.Join(t.TempDir(), "operator.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Errorf("stop the operator: %v", err)
		}
		if t.Failed() {
			t.Logf("operator log %s ends with:\n%s", op.LogPath(), story.LastLines(op.LogPath(), 40))
		}
	})

	w := newStoryWatcher(t, c, releases)
	mark, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var steps []story.Step
	err = story.Run(ctx, story.Options{
		Kubeconfig: c.Kubeconfig(), CLI: cli, Operator: op, Out: &out, Releases: releases,
		AfterStep: func(ctx context.Context, step story.Step) error {
			steps = append(steps, step)
			return w.check(ctx, step)
		},
	})
	if err != nil {
		t.Fatalf("the story failed: %v\noutput so far:\n%s", err, out.String())
	}
	want := []story.Step{story.StepOperatorUp, story.StepInstalled, story.StepUnsignedRefused, story.StepDeletePending, story.StepMinorRefused, story.StepMinorCompleted}
	if !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}

	text := out.String()
	// Status tables align their columns to the longest cell: compare with
	// whitespace runs collapsed, so a new condition does not move them.
	squeezed := strings.Join(strings.Fields(text), " ")
	for _, s := range []string{
		"$ payload-applier status",
		"Upgradeable      False   ResourceDeletionInProgress",
		"Gadget.example.com/gadget/default",
		"ReleaseAccepted  False   PreconditionChecks",
		"ReleaseAccepted  False   ImageVerificationFailed",
		"Desired image: " + releases.Signed["1.1.0"],
		"Cluster version: 1.1.0",
		`payload_applier_deletes_total{result="requested"}`,
	} {
		if !strings.Contains(squeezed, strings.Join(strings.Fields(s), " ")) {
			t.Errorf("the story's output lacks %q:\n%s", s, text)
		}
	}
	if n := strings.Count(text, "$ payload-applier status"); n != 6 {
		t.Errorf("status printed %d times, want once per step (6)", n)
	}

	// The operator's deletes, in the order it sent them: the reverse of
	// 1.0.0's payload order, each wave after the one before it was gone.
	// The RBAC file's three objects are passive and share a wave, so they
	// go out together, in any order.
	events, err := c.AuditSince(mark, cluster.AuditFilter{Verb: "delete"})
	if err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, e := range events {
		deletes = append(deletes, e.ObjectRef.Resource+"/"+e.ObjectRef.Name)
	}
	wantDeletes := []string{
		"clusteroperators/gadget", "gadgets/default", "deployments/gadget-operator",
		"clusterrolebindings/gadget-operator", "clusterroles/gadget-operator", "serviceaccounts/gadget-operator",
		"customresourcedefinitions/gadgets.example.com", "namespaces/gadget",
	}
	if len(deletes) == len(wantDeletes) {
		slices.Sort(deletes[3:6]) // the RBAC wave
		slices.Sort(wantDeletes[3:6])
	}
	if !slices.Equal(deletes, wantDeletes) {
		t.Errorf("the operator deleted\n  %v\nwant, in this order (the RBAC wave in any),\n  %v", deletes, wantDeletes)
	}
}

// storyWatcher checks the cluster's state at each step of the story.
type storyWatcher struct {
	*clients
	config   configclient.Interface
	releases *story.Releases
}

func newStoryWatcher(t *testing.T, c *cluster.Cluster, releases *story.Releases) *storyWatcher {
	t.Helper()
	cfg := c.RESTConfig()
	cc, err := configclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &storyWatcher{clients: newClientsFor(t, cfg), config: cc, releases: releases}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// check returns an error describing every way the cluster differs from
// what step promises.
func (w *storyWatcher) check(ctx context.Context, step story.Step) error {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	cv, err := w.config.ConfigV1().ClusterVersions().Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		return err
	}
	gadget, err := w.dynamic.Resource(story.GadgetResource).Namespace("gadget").Get(ctx, "default", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		gadget, err = nil, nil
	}
	if err != nil {
		return err
	}
	exists := func(err error) bool {
		if err != nil && !apierrors.IsNotFound(err) {
			fail("unexpected error: %v", err)
		}
		return err == nil
	}
	_, err = w.config.ConfigV1().ClusterOperators().Get(ctx, "gadget", metav1.GetOptions{})
	coExists := exists(err)
	_, err = w.kube.CoreV1().Namespaces().Get(ctx, "gadget", metav1.GetOptions{})
	nsExists := exists(err)
	_, err = w.dynamic.Resource(crdResource).Get(ctx, "gadgets.example.com", metav1.GetOptions{})
	crdExists := exists(err)
	_, err = w.kube.CoreV1().ConfigMaps("demo-config").Get(ctx, "feature-flags", metav1.GetOptions{})
	flagsExist := exists(err)
	settings, err := w.kube.CoreV1().ConfigMaps("demo-config").Get(ctx, "settings", metav1.GetOptions{})
	greeting := ""
	if exists(err) {
		greeting = settings.Data["greeting"]
	}

	history := func(want ...string) {
		var got []string
		for _, h := range cv.Status.History {
			got = append(got, h.Version+" "+string(h.State))
		}
		if !slices.Equal(got, want) {
			fail("history %v, want %v", got, want)
		}
	}
	condition := func(t configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string) {
		c := story.Condition(cv, t)
		if c == nil || c.Status != status || c.Reason != reason {
			fail("condition %s = %+v, want %s (%s)", t, c, status, reason)
		}
	}
	terminating := gadget != nil && gadget.GetDeletionTimestamp() != nil

	switch step {
	case story.StepOperatorUp:
		history()
		condition(clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonNoDesiredUpdate)
		if coExists || nsExists || gadget != nil {
			fail("objects of a release exist before any was requested")
		}
	case story.StepInstalled:
		history("1.0.0 Completed")
		condition(configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)
		if gadget == nil || terminating || !slices.Contains(gadget.GetFinalizers(), "example.com/cleanup") {
			fail("want Gadget gadget/default with its finalizer, not terminating; got %v", gadget)
		}
		if !coExists || !nsExists || !crdExists {
			fail("the gadget component is incomplete: ClusterOperator %t, namespace %t, CRD %t", coExists, nsExists, crdExists)
		}
		if greeting != "Hello from release 1.0.0" {
			fail("settings greeting %q", greeting)
		}
	case story.StepUnsignedRefused:
		history("1.0.0 Completed")
		condition(clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
		if cv.Spec.DesiredUpdate == nil || cv.Spec.DesiredUpdate.Image != w.releases.Unsigned || cv.Status.Desired.Image != w.releases.Signed["1.0.0"] {
			fail("want the unsigned image requested and 1.0.0's desired; spec %+v, desired %s", cv.Spec.DesiredUpdate, cv.Status.Desired.Image)
		}
		_, err := w.kube.CoreV1().ConfigMaps("demo-config").Get(ctx, story.UnsignedMarker, metav1.GetOptions{})
		if exists(err) || gadget == nil || terminating || greeting != "Hello from release 1.0.0" {
			fail("the unsigned release was applied: ConfigMap %s exists %t, Gadget %v, greeting %q", story.UnsignedMarker, err == nil, gadget, greeting)
		}
	case story.StepDeletePending:
		history("1.0.1 Completed", "1.0.0 Completed")
		if h := cv.Status.History; len(h) > 0 && (!h[0].Verified || h[0].Image != w.releases.Signed["1.0.1"]) {
			fail("1.0.1's history entry %+v is not verified by the digest %s", h[0], w.releases.Signed["1.0.1"])
		}
		condition(configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress)
		if c := story.Condition(cv, configv1.OperatorUpgradeable); c == nil || !strings.Contains(c.Message, "Gadget.example.com/gadget/default (finalizers: example.com/cleanup)") {
			fail("Upgradeable does not name the Gadget held by its finalizer: %+v", c)
		}
		if !terminating {
			fail("the Gadget is not terminating: %v", gadget)
		}
		// Reverse order: the ClusterOperator went first; the namespace and
		// the CRD wait behind the Gadget.
		if coExists || !nsExists || !crdExists {
			fail("want the ClusterOperator gone and the namespace and CRD kept; ClusterOperator %t, namespace %t, CRD %t", coExists, nsExists, crdExists)
		}
		self := apply.DefaultSelf()
		recs, err := deletion.NewConfigMapStore(w.kube, self.Namespace, self.Ledger).Load(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(recs, func(r deletion.Record) bool {
			return r.ID.Kind == "Gadget" && r.ID.Name == "default" && r.State == deletion.InProgress && r.Release == "1.0.1"
		}) {
			fail("the delete ledger does not record the Gadget's delete as in progress for 1.0.1: %+v", recs)
		}
		if greeting != "Hello from release 1.0.1" {
			fail("settings greeting %q", greeting)
		}
	case story.StepMinorRefused:
		history("1.0.1 Completed", "1.0.0 Completed")
		condition(clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
		condition(configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress)
		if cv.Spec.DesiredUpdate == nil || cv.Spec.DesiredUpdate.Version != "1.1.0" || cv.Status.Desired.Version != "1.0.1" {
			fail("want 1.1.0 requested and 1.0.1 desired; spec %+v, desired %s", cv.Spec.DesiredUpdate, cv.Status.Desired.Version)
		}
		if !terminating || flagsExist {
			fail("want the Gadget still terminating and nothing of 1.1.0 applied; terminating %t, feature-flags %t", terminating, flagsExist)
		}
	case story.StepMinorCompleted:
		history("1.1.0 Completed", "1.0.1 Completed", "1.0.0 Completed")
		if h := cv.Status.History; len(h) > 0 && (!h[0].Verified || h[0].Image != w.releases.Signed["1.1.0"] || cv.Status.Desired.Image != h[0].Image) {
			fail("1.1.0's history entry %+v is not verified by the digest %s, or not desired (%s)", h[0], w.releases.Signed["1.1.0"], cv.Status.Desired.Image)
		}
		condition(configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)
		condition(clusterversion.ConditionReleaseAccepted, configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded)
		if gadget != nil || coExists || nsExists || crdExists {
			fail("the gadget component is not fully gone: Gadget %t, ClusterOperator %t, namespace %t, CRD %t", gadget != nil, coExists, nsExists, crdExists)
		}
		if _, err := w.kube.RbacV1().ClusterRoles().Get(ctx, "gadget-operator", metav1.GetOptions{}); exists(err) {
			fail("ClusterRole gadget-operator still exists")
		}
		if !flagsExist || greeting != "Hello from release 1.1.0" {
			fail("1.1.0 is not applied: feature-flags %t, greeting %q", flagsExist, greeting)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("at %q:\n  %s", step, strings.Join(problems, "\n  "))
	}
	return nil
}
