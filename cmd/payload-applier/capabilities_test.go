package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// The manifest counts docs/operations.md gives for ocp-real installed
// with no optional capability and with the default set.
func TestPlanRealPayloadInstallCapabilitySets(t *testing.T) {
	if _, err := os.Stat(ocpReal); err != nil {
		t.Skipf("no real payload at %s: %v", ocpReal, err)
	}
	for set, want := range map[string]struct{ apply, skip, disabled int }{
		"None":     {apply: 296, skip: 220, disabled: 145},
		"vCurrent": {apply: 434, skip: 82, disabled: 0},
	} {
		t.Run(set, func(t *testing.T) {
			stdout, stderr, code := planCLI(t, "plan", "--payload", ocpReal, "--mode", "install", "--baseline-capability-set", set, "-o", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var doc planDoc
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatal(err)
			}
			var apply, skip, disabled int
			for _, n := range doc.Nodes {
				for _, task := range n.Tasks {
					switch task.Action {
					case "apply":
						apply++
					case "skip":
						skip++
					}
					if strings.Contains(task.Reason, "disabled capabilities") {
						disabled++
					}
				}
			}
			if apply != want.apply || skip != want.skip || disabled != want.disabled {
				t.Errorf("%d apply, %d skip (%d for disabled capabilities); want %d, %d (%d)", apply, skip, disabled, want.apply, want.skip, want.disabled)
			}
			if set == "None" && len(doc.Capabilities.Enabled) != 0 || set == "vCurrent" && len(doc.Capabilities.Enabled) != len(configv1.KnownClusterVersionCapabilities) {
				t.Errorf("capabilities %+v for set %s", doc.Capabilities, set)
			}
		})
	}
}

func TestPlanCapabilityFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--baseline-capability-set", "v9.99"}, `unknown baseline capability set "v9.99"`},
		{[]string{"--capability", "Console", "--capability", "Teleport"}, "unknown capabilities Teleport"},
	} {
		_, stderr, code := planCLI(t, append([]string{"plan", "--payload", planPayload}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
	stdout, stderr, code := planCLI(t, "plan", "--payload", planPayload, "--baseline-capability-set", "None", "--capability", "Console", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc planDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Capabilities.Enabled, []string{"Console"}) || doc.Capabilities.WouldImplicitlyEnable == nil || doc.Capabilities.ImplicitlyEnabled == nil {
		t.Errorf("capabilities %+v; want Console alone, and lists, never null", doc.Capabilities)
	}
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func capManifest(name, caps string) string {
	ann := ""
	if caps != "" {
		ann = "\n    capability.openshift.io/name: " + caps
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: demo\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"" + ann + "\n"
}

// liveCapabilityCluster is a ClusterVersion whose spec asks for no
// capability and whose status enabled Console, a ConfigMap "moved" that
// the cluster holds, and a release 1.1.0 that puts it behind Build.
func liveCapabilityCluster(t *testing.T, desired string) (*configfake.Clientset, *apply.Engine, *payload.Release) {
	t.Helper()
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: desired},
			Capabilities: configv1.ClusterVersionCapabilitiesStatus{EnabledCapabilities: []configv1.ClusterVersionCapability{"Console"}}}}
	moved := &unstructured.Unstructured{}
	moved.SetAPIVersion("v1")
	moved.SetKind("ConfigMap")
	moved.SetNamespace("demo")
	moved.SetName("moved")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"}, moved)
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.1.0", nil, map[string]string{
		"0000_50_demo_00_moved.yaml":   capManifest("moved", "Build"),
		"0000_50_demo_01_absent.yaml":  capManifest("absent", "Insights"),
		"0000_50_demo_02_console.yaml": capManifest("console", "Console"),
		"0000_50_demo_03_plain.yaml":   capManifest("plain", ""),
	})
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	e, err := apply.New(apply.Config{Dynamic: dyn, Mapper: staticMapper{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	return configfake.NewSimpleClientset(cv), e, rel
}

func kept(rel *payload.Release) []string {
	var names []string
	for _, m := range rel.Manifests {
		names = append(names, m.Obj.GetName())
	}
	return names
}

func TestPlanLiveCapabilitiesPreviewImplicitEnablement(t *testing.T) {
	cc, e, rel := liveCapabilityCluster(t, "1.0.0")
	f := &capabilityFlags{}
	got, caps, err := f.liveCapabilities(context.Background(), cc, e, rel, graph.ModeUpdate, payload.DefaultLoadOptions(), noCurrentRelease)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps.Enabled, []string{"Build", "Console"}) || !slices.Equal(caps.WouldImplicitlyEnable, []string{"Build"}) ||
		!slices.Equal(caps.ImplicitlyEnabled, []string{"Build", "Console"}) {
		t.Errorf("capabilities %+v; want Console kept from status and Build previewed", caps)
	}
	if !strings.Contains(caps.Message, "the update would enable implicitly: Build,") || !strings.Contains(caps.Message, "ConfigMap/demo/moved") {
		t.Errorf("message %q does not name the capability and the object", caps.Message)
	}
	if names := kept(got); !slices.Equal(names, []string{"moved", "console", "plain"}) {
		t.Errorf("plan keeps %v; want moved (Build, previewed), console (Console, from status) and plain", names)
	}

	t.Log("outside update mode nothing is previewed")
	got, caps, err = f.liveCapabilities(context.Background(), cc, e, rel, graph.ModeReconcile, payload.DefaultLoadOptions(), noCurrentRelease)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps.WouldImplicitlyEnable) != 0 || !slices.Equal(kept(got), []string{"console", "plain"}) {
		t.Errorf("reconcile: capabilities %+v, kept %v", caps, kept(got))
	}

	t.Log("the flags stand in for the spec; the status still counts")
	f = &capabilityFlags{baseline: "None", additional: []string{"Insights"}}
	got, caps, err = f.liveCapabilities(context.Background(), cc, e, rel, graph.ModeUpdate, payload.DefaultLoadOptions(), noCurrentRelease)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps.Enabled, []string{"Build", "Console", "Insights"}) || !slices.Equal(kept(got), []string{"moved", "absent", "console", "plain"}) {
		t.Errorf("with flags: capabilities %+v, kept %v", caps, kept(got))
	}
}

// noCurrentRelease is a plan without the cluster's current release.
func noCurrentRelease(*configv1.ClusterVersion) (*payload.Release, error) {
	return nil, errors.New("not at hand")
}

// TestPlanLiveCapabilitiesFromTheCurrentRelease: with the current release
// at hand, plan previews what the operator decides from it: a managed
// object deleted since still counts, which the objects on the cluster
// cannot tell.
func TestPlanLiveCapabilitiesFromTheCurrentRelease(t *testing.T) {
	cc, e, rel := liveCapabilityCluster(t, "1.0.0")
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
		"0000_50_demo_00_moved.yaml":  capManifest("moved", ""),
		"0000_50_demo_01_absent.yaml": capManifest("absent", ""),
	})
	current, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	read := func(cv *configv1.ClusterVersion) (*payload.Release, error) {
		if cv.Status.Desired.Version != "1.0.0" {
			t.Errorf("asked for the current release %q, want 1.0.0", cv.Status.Desired.Version)
		}
		return current, nil
	}
	got, caps, err := (&capabilityFlags{}).liveCapabilities(context.Background(), cc, e, rel, graph.ModeUpdate, payload.DefaultLoadOptions(), read)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps.WouldImplicitlyEnable, []string{"Build", "Insights"}) {
		t.Errorf("previewed %v, want Build and Insights, as the operator decides from 1.0.0", caps.WouldImplicitlyEnable)
	}
	if !strings.Contains(caps.Message, "the update would enable implicitly: Build, Insights, for it puts objects the current release 1.0.0 manages behind them") {
		t.Errorf("message %q", caps.Message)
	}
	if names := kept(got); !slices.Equal(names, []string{"moved", "absent", "console", "plain"}) {
		t.Errorf("plan keeps %v", names)
	}
	_, approx, err := (&capabilityFlags{}).liveCapabilities(context.Background(), cc, e, rel, graph.ModeUpdate, payload.DefaultLoadOptions(), noCurrentRelease)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(approx.WouldImplicitlyEnable, []string{"Build"}) || !strings.Contains(approx.Message, "the current release cannot be read: not at hand") {
		t.Errorf("without the current release: previewed %v, %q", approx.WouldImplicitlyEnable, approx.Message)
	}
}

func TestPlanLiveCapabilitiesNoPreviewWithoutAnUpdate(t *testing.T) {
	for _, desired := range []string{"", "1.1.0"} {
		cc, e, rel := liveCapabilityCluster(t, desired)
		_, caps, err := (&capabilityFlags{}).liveCapabilities(context.Background(), cc, e, rel, graph.ModeUpdate, payload.DefaultLoadOptions(), noCurrentRelease)
		if err != nil {
			t.Fatal(err)
		}
		if len(caps.WouldImplicitlyEnable) != 0 {
			t.Errorf("desired %q: previewed %v, though there is no update from another release", desired, caps.WouldImplicitlyEnable)
		}
	}
}

func TestStatusTextShowsCapabilities(t *testing.T) {
	cv := &configv1.ClusterVersion{
		Spec: configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{
			BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: []configv1.ClusterVersionCapability{"Console"}}},
		Status: configv1.ClusterVersionStatus{Capabilities: configv1.ClusterVersionCapabilitiesStatus{
			EnabledCapabilities: []configv1.ClusterVersionCapability{"Build", "Console"},
			KnownCapabilities:   configv1.KnownClusterVersionCapabilities}},
	}
	doc := statusJSON{Status: cv.Status, ImplicitlyEnabledCapabilities: statusCapabilities(cv)}
	var out bytes.Buffer
	writeStatusText(&out, doc, metav1.Now().Time)
	for _, line := range []string{"Capabilities: 2 of 17 enabled (Build, Console)\n", "Implicitly enabled capabilities: Build ("} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, out.String())
		}
	}
}
