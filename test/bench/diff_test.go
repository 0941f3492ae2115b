package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func mustYAML(t *testing.T, s string) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNormaliseDropsClusterFields(t *testing.T) {
	in := mustYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
  uid: u1
  resourceVersion: "7"
  generation: 2
  creationTimestamp: "2026-01-01T00:00:00Z"
  deletionTimestamp: "2026-01-02T00:00:00Z"
  selfLink: /apis/apps/v1/namespaces/ns/deployments/d
  managedFields: [{manager: x}]
  labels: {a: b}
  ownerReferences: [{kind: ClusterVersion, name: version, uid: u2}]
spec:
  replicas: 1
status:
  replicas: 1
`)
	want := mustYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
  labels: {a: b}
  ownerReferences: [{kind: ClusterVersion, name: version}]
spec:
  replicas: 1
`)
	if got := normalise(in); !reflect.DeepEqual(got, want) {
		t.Errorf("normalise:\n got %v\nwant %v", got, want)
	}
	if _, ok := in["status"]; !ok {
		t.Error("normalise changed its input")
	}
}

func TestNormaliseDropsServiceClusterIPsUnlessHeadless(t *testing.T) {
	got := normalise(mustYAML(t, `{kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.1, clusterIPs: [10.0.0.1], ports: [{port: 443}]}}`))
	if want := mustYAML(t, `{kind: Service, metadata: {name: s}, spec: {ports: [{port: 443}]}}`); !reflect.DeepEqual(got, want) {
		t.Errorf("normalise:\n got %v\nwant %v", got, want)
	}
	headless := mustYAML(t, `{kind: Service, metadata: {name: s}, spec: {clusterIP: None, clusterIPs: [None]}}`)
	if got := normalise(headless); !reflect.DeepEqual(got, headless) {
		t.Errorf("normalise changed a headless Service: %v", got)
	}
}

func TestNormaliseClusterVersionKeepsWhatTheOperatorDecides(t *testing.T) {
	in := mustYAML(t, `
apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version, uid: u1}
spec: {clusterID: c}
status:
  observedGeneration: 3
  versionHash: h
  desired: {version: "4.20.0", image: i, url: u, channels: [c]}
  conditions:
  - {type: Progressing, status: "False", reason: R, message: m, lastTransitionTime: t}
  - {type: Available, status: "True", lastTransitionTime: t}
  history:
  - {state: Completed, version: "4.20.0", image: i, startedTime: t, completionTime: t, verified: false}
  capabilities: {enabledCapabilities: [a]}
  availableUpdates: null
  conditionalUpdates: []
`)
	want := mustYAML(t, `
apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version}
spec: {clusterID: c}
status:
  desired: {version: "4.20.0", image: i}
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "False", reason: R}
  history:
  - {state: Completed, version: "4.20.0"}
  capabilities: {enabledCapabilities: [a]}
  availableUpdates: null
  conditionalUpdates: []
`)
	if got := normalise(in); !reflect.DeepEqual(got, want) {
		t.Errorf("normalise:\n got %v\nwant %v", got, want)
	}
}

func TestDiffValues(t *testing.T) {
	a := mustYAML(t, `
metadata:
  annotations: {"x.io/a": "1", gone: "g"}
spec:
  replicas: 1
  containers: [{name: c1, image: i1}, {name: c2, image: i2}]
  args: [a, b]
  conditions: [{type: A, status: "True"}, {type: B, status: "True"}]
`)
	b := mustYAML(t, `
metadata:
  annotations: {"x.io/a": "2", added: "n"}
spec:
  replicas: 1
  containers: [{name: c2, image: i2}, {name: c1, image: i9}]
  args: [a]
  conditions: [{type: A, status: "False"}, {type: C, status: "True"}]
`)
	var got []pathDiff
	diffValues("", a, b, &got)
	want := []pathDiff{
		{`.metadata.annotations.added`, absent, `"n"`},
		{`.metadata.annotations.gone`, `"g"`, absent},
		{`.metadata.annotations["x.io/a"]`, `"1"`, `"2"`},
		{`.spec.args[1]`, `"b"`, absent},
		{`.spec.conditions[type=A].status`, `"True"`, `"False"`},
		{`.spec.conditions[type=B]`, `{"status":"True","type":"B"}`, absent},
		{`.spec.conditions[type=C]`, absent, `{"status":"True","type":"C"}`},
		{`.spec.containers[name=c1].image`, `"i1"`, `"i9"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diffValues:\n got %q\nwant %q", got, want)
	}
}

func TestDiffDumpsAndReport(t *testing.T) {
	dir := t.TempDir()
	write := func(side, name, body string) {
		p := filepath.Join(dir, side, phaseInstall, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "core_ConfigMap_n_same.yaml", "data: {k: v}\n")
	write("b", "core_ConfigMap_n_same.yaml", "data: {k: v}\n")
	write("a", "core_ConfigMap_n_one.yaml", "data: {k: v}\n")
	write("b", "core_ConfigMap_n_one.yaml", "data: {k: w}\n")
	write("a", "core_ConfigMap_n_two.yaml", "data: {k: v}\n")
	write("b", "core_ConfigMap_n_two.yaml", "data: {k: x}\n")
	write("a", "apps_Deployment_n_onlya.yaml", "spec: {}\n")
	write("b", "core_Service_n_onlyb.yaml", "spec: {}\n")
	for _, side := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, side, phaseReconcile), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := diffDumps(filepath.Join(dir, "a", phaseInstall), filepath.Join(dir, "b", phaseInstall))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.OnlyA, []string{"apps_Deployment_n_onlya.yaml"}) || !reflect.DeepEqual(d.OnlyB, []string{"core_Service_n_onlyb.yaml"}) {
		t.Errorf("only: A %v, B %v", d.OnlyA, d.OnlyB)
	}
	groups := d.groups()
	if len(groups) != 1 || groups[0].Kind != "ConfigMap.core" || groups[0].Path != ".data.k" || len(groups[0].Objects) != 2 {
		t.Fatalf("groups: %+v", groups)
	}
	report, err := diffReport(dir, "a", "b", map[string][]editResult{"b": {{What: "edit", Reverted: true, Final: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"core_ConfigMap_n_one: A `\"v\"` B `\"w\"`", "core_ConfigMap_n_two: A `\"v\"` B `\"x\"`", "apps_Deployment_n_onlya", "core_Service_n_onlyb", "| b | edit | true |"} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
}

func TestRenderTruncates(t *testing.T) {
	if got := render(strings.Repeat("x", 500)); len(got) > 210 || !strings.HasSuffix(got, "…") {
		t.Errorf("render: %d characters: %s", len(got), got)
	}
}

func TestHandEditsRecognised(t *testing.T) {
	// Each edit's field must see its own edit, or the wait could not tell.
	for _, h := range handEdits {
		if h.edit == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: mustYAML(t, `
metadata:
  labels: {rbac.authorization.k8s.io/aggregate-to-cluster-reader: "true"}
  annotations: {workload.openshift.io/allowed: management}
spec: {replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}
data: {config.yaml: c}
`)}
		before := h.field(u)
		h.edit(u)
		if h.field(u) == before {
			t.Errorf("%s: the field reads %q before and after the edit", h.what, before)
		}
	}
}
