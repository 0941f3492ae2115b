package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ocEnv names the real oc binary the client checks run (make oc-check
// builds it from source); without it they skip.
const ocEnv = "PAYLOAD_APPLIER_OC"

// TestOCPrintsTheOperatorsAnUpdateWaitsOn runs the real `oc adm upgrade`
// and `oc adm upgrade status` after each step of the ClusterOperator
// scenario, on the cluster's ClusterVersion "version": oc must print what
// the operator wrote, as it prints a CVO cluster's. With
// PAYLOAD_APPLIER_OC_RECORD set, their output goes to that file, as
// docs/operations.md quotes it.
func TestOCPrintsTheOperatorsAnUpdateWaitsOn(t *testing.T) {
	oc := os.Getenv(ocEnv)
	if oc == "" {
		t.Skipf("%s is not set: run make oc-check, which builds the real oc", ocEnv)
	}
	resetClusterVersion(t)
	t.Cleanup(func() { resetClusterVersion(t) })
	machineConfigOperatorStandIn(t)
	var record bytes.Buffer
	run := func(args ...string) string {
		cmd := exec.Command(oc, append([]string{"--kubeconfig", testCluster.Kubeconfig()}, args...)...)
		out, _ := cmd.CombinedOutput()
		fmt.Fprintf(&record, "$ oc %s\n%s\n", strings.Join(args, " "), out)
		return string(out)
	}
	operatorWaitScenario(t, "version", func(step string, cv *configv1.ClusterVersion) {
		fmt.Fprintf(&record, "## %s\n\n", step)
		upgrade := run("adm", "upgrade")
		status := run("adm", "upgrade", "status")
		// oc adm upgrade status names Failing's reason when it is not
		// False, as an update stalled or at risk of it.
		if f := condition(cv, "Failing"); f.Status != configv1.ConditionFalse && f.Reason != "" &&
			condition(cv, configv1.OperatorProgressing).Status == configv1.ConditionTrue && !strings.Contains(status, "("+f.Reason+")") {
			t.Errorf("%s: oc adm upgrade status does not name %s:\n%s", step, f.Reason, status)
		}
		// oc prints Failing's message when it is not False, and
		// Progressing's.
		for _, ct := range []configv1.ClusterStatusConditionType{"Failing", configv1.OperatorProgressing} {
			c := condition(cv, ct)
			if ct == "Failing" && c.Status == configv1.ConditionFalse {
				continue
			}
			first, _, _ := strings.Cut(c.Message, "\n")
			if !strings.Contains(upgrade, first) {
				t.Errorf("%s: oc adm upgrade does not print %s's %q:\n%s", step, ct, first, upgrade)
			}
		}
	})
	if path := os.Getenv("PAYLOAD_APPLIER_OC_RECORD"); path != "" {
		if err := os.WriteFile(path, record.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// machineConfigOperatorStandIn is what `oc adm upgrade status` reads of
// the machine-config operator besides ClusterOperators: its pools (none)
// and its Deployment, which no kubelet runs here.
func machineConfigOperatorStandIn(t *testing.T) {
	t.Helper()
	c := newClients(t)
	ctx := context.Background()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: machineconfigpools.machineconfiguration.openshift.io
spec:
  group: machineconfiguration.openshift.io
  scope: Cluster
  names: {plural: machineconfigpools, singular: machineconfigpool, kind: MachineConfigPool, listKind: MachineConfigPoolList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := c.dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const ns = "openshift-machine-config-operator"
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"k8s-app": "machine-config-operator"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "machine-config-operator", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "machine-config-operator", Image: "example.com/mco:1.1.0"}}}}}}
	if _, err := c.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitFor(t, "the MachineConfigPool CRD to be served", time.Minute, func() bool {
		_, err := c.dynamic.Resource(schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}).List(ctx, metav1.ListOptions{})
		return err == nil
	})
}
