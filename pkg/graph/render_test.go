package graph

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// planPayload is a small payload with every shape the renderers must show:
// parallel components, a Job barrier, an unparsed name, a component over
// two run levels, and deletes.
func planPayload() []*Task {
	tasks := fileTasks(
		"0000_00_cluster-version-operator_00_namespace.yaml",
		"0000_03_config-operator_01_proxies.crd.yaml",
		"0000_10_etcd-operator_00_namespace.yaml",
		"0000_10_etcd-operator_01_deployment.yaml",
		"0000_10_kube-apiserver-operator_00_namespace.yaml",
		"0000_10_kube-apiserver-operator_01_old-service.yaml",
		"0000_30_machine-api_00_migrate.job.yaml",
		"0000_50_olm_00_namespace.yaml",
		"0000_50_olm_01_old-crd.yaml",
		"0000_50_olm_02_old-deployment.yaml",
		"0000_50_olm_03_clusteroperator.yaml",
		"0000_50_samples_00_namespace.yaml",
		"0000_90_olm_00_old-servicemonitor.yaml",
		"0000_90_olm_01_prometheusrule.yaml",
		"image-references",
	)
	tasks[3].Name = `deployment "openshift-etcd-operator/etcd-operator"`
	tasks[6].Job = true
	for _, i := range []int{5, 8, 9, 12} {
		tasks[i].Delete = true
	}
	return tasks
}

func TestRender(t *testing.T) {
	tests := map[string]struct {
		graph  *Graph
		render func(*Graph) string
	}{
		"update.tree":      {Build(planPayload(), BuildOptions{Mode: ModeUpdate}), (*Graph).Tree},
		"update.dot":       {Build(planPayload(), BuildOptions{Mode: ModeUpdate}), (*Graph).DOT},
		"install.tree":     {Build(planPayload(), BuildOptions{Mode: ModeInstall}), (*Graph).Tree},
		"reconcile-3.tree": {Build(planPayload(), BuildOptions{Mode: ModeReconcile, Attempt: 3}), (*Graph).Tree},
		"deletes.tree":     {BuildDeletes(planPayload()), (*Graph).Tree},
		"deletes.dot":      {BuildDeletes(planPayload()), (*Graph).DOT},
		"empty.tree":       {&Graph{}, (*Graph).Tree},
		"empty.dot":        {nil, (*Graph).DOT},
	}
	for name, tt := range tests {
		t.Run("the "+name+" rendering matches its golden file", func(t *testing.T) {
			got := tt.render(tt.graph)
			if again := tt.render(tt.graph); again != got {
				t.Fatalf("rendering is not stable:\n%s\n---\n%s", got, again)
			}
			path := filepath.Join("testdata", name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestRender -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("rendering differs from %s:\n%s", path, got)
			}
		})
	}
}

func TestDOTEscapesLabels(t *testing.T) {
	g := New([]*Task{{File: `0000_10_a"b_x`, RunLevel: 10, Component: `a"b`}})
	if dot := g.DOT(); !strings.Contains(dot, `10-a\"b`) {
		t.Errorf("quote not escaped:\n%s", dot)
	}
}
