package manifests

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The Deployment runs the image `make image REGISTRY=quay.io/payload-applier`
// pushes: <REGISTRY>/payload-applier:<the version of release-metadata>.
func TestTheDeploymentRunsTheImageMakeImagePushes(t *testing.T) {
	var meta struct{ Version string }
	data, err := os.ReadFile("release-metadata")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile("0000_00_cluster-version-operator_04_deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	want := "quay.io/payload-applier/payload-applier:" + meta.Version
	if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("the Deployment runs %s, want %s", got, want)
	}
	if !strings.Contains(string(data), "make image") {
		t.Error("the Deployment does not say where its image comes from")
	}
}
