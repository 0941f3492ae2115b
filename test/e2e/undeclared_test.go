package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// cronJobWithATypo is a CronJob whose Job spec misspells backoffLimit, as
// a real OpenShift manifest does.
func cronJobWithATypo(ns string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: pruner
  namespace: %s
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      backOffLimit: 3
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: prune
            image: registry.example.com/pruner:1
`, ns)
}

// TestAFieldTheSchemaLacksIsDroppedAtTheFirstCreate: as the CVO's typed
// clients, the create lets the apiserver drop a field the schema does not
// declare, at the first try: no request of the apply is refused, the
// object exists without the field, and an Event names it.
func TestAFieldTheSchemaLacksIsDroppedAtTheFirstCreate(t *testing.T) {
	bin, c, ns := newCLITest(t)
	dir := writePayload(t, "1.0.0", map[string]string{"0000_50_pruner_00_cronjob.yaml": cronJobWithATypo(ns)})
	since := metav1.NewTime(time.Now().Add(-time.Second))
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writes, err := testCluster.WaitForAudit(ctx, mark, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: cluster.ApplierUser,
		Resource: "cronjobs", Namespace: ns, WritesOnly: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range writes {
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
			t.Errorf("refused: %s: %d %s", ev, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
		}
	}
	obj := c.get(t, schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, ns, "pruner")
	if obj == nil {
		t.Fatal("the CronJob was not created")
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "jobTemplate", "spec")
	if _, ok := spec["backOffLimit"]; ok {
		t.Error("the undeclared field was kept")
	}
	if !hasEvent(t, "UndeclaredFieldsDropped", ".spec.jobTemplate.spec.backOffLimit", since) {
		t.Error("no Event names the dropped field")
	}
}
