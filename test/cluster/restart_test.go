package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

func TestRestartAPIServerKeepsStateClientsAndTheAuditLog(t *testing.T) {
	ctx := t.Context()
	client := adminClient(t) // built before the restart, used after it
	ns := testCluster.CreateNamespace(t)
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hostBefore := testCluster.Host()
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}

	if err := testCluster.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}

	if testCluster.Host() != hostBefore {
		t.Fatalf("the apiserver moved from %s to %s", hostBefore, testCluster.Host())
	}
	// The client's pooled connections died with the old process; a bounded
	// poll lets it reconnect.
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = client.CoreV1().ConfigMaps(ns).Get(ctx, "owner", metav1.GetOptions{})
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("the object stored before the restart cannot be read after it: %v", lastErr)
	}

	events, err := testCluster.AuditEventsSince(mark)
	if err != nil {
		t.Fatalf("the audit log is unreadable across the restart: %v", err)
	}
	if got := FilterAudit(events, AuditFilter{Verb: "get", User: AdminUser, Resource: "configmaps", Namespace: ns, Name: "owner"}); len(got) == 0 {
		t.Fatal("the restarted apiserver did not append to the audit log after the mark")
	}
	log, err := os.ReadFile(filepath.Join(testCluster.LogDir(), apiServerBin+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "$ "+filepath.Join(testCluster.binDir, apiServerBin)); n < 2 {
		t.Errorf("kube-apiserver.log holds %d command lines, want the first start's and the restart's", n)
	}

	// The controller manager reconnects: its garbage collector still
	// removes the dependents of a deleted owner.
	dependent := configMap("dependent")
	dependent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(false)}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "the dependent of a deleted owner", func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return err
	})
}
