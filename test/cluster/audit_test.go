package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestAuditCountsOneCreateByAdmin(t *testing.T) {
	ctx := t.Context()
	client := adminClient(t)
	ns := testCluster.CreateNamespace(t)

	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("counted"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "counted", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	events, err := testCluster.AuditEventsSince(mark)
	if err != nil {
		t.Fatal(err)
	}
	// RequestReceived events are on disk before the response, so these
	// counts are exact without waiting.
	creates := FilterAudit(events, AuditFilter{Verb: "create", User: AdminUser, Resource: "configmaps", Namespace: ns})
	if len(creates) != 1 {
		t.Fatalf("admin creates of configmaps in %s after the mark = %d, want 1: %v", ns, len(creates), creates)
	}
	writes := FilterAudit(events, AuditFilter{User: AdminUser, WritesOnly: true})
	if len(writes) != 1 {
		t.Fatalf("admin writes after the mark = %d, want 1: %v", len(writes), writes)
	}
	gets, err := testCluster.CountAudit(mark, AuditFilter{Verb: "get", User: AdminUser, Resource: "configmaps", Namespace: ns, Name: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	if gets != 1 {
		t.Fatalf("admin gets of configmaps %s/counted after the mark = %d, want 1", ns, gets)
	}

	// The created name and the status code arrive with ResponseComplete.
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done, err := testCluster.WaitForAudit(waitCtx, mark, AuditFilter{
		Stage: AuditStageResponseComplete, Verb: "create", User: AdminUser, Resource: "configmaps", Namespace: ns, Name: "counted",
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].AuditID != creates[0].AuditID {
		t.Fatalf("completed creates of %s/counted = %v, want the one request %s", ns, done, creates[0].AuditID)
	}
	if done[0].ResponseStatus == nil || done[0].ResponseStatus.Code != 201 {
		t.Fatalf("create response status = %+v, want code 201", done[0].ResponseStatus)
	}
}

func TestTokenUserWithoutBindingsIsForbidden(t *testing.T) {
	ctx := t.Context()
	ns := testCluster.CreateNamespace(t)
	cfg, err := testCluster.UserRESTConfig(limitedUser)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("denied"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create as %s: got %v, want Forbidden", limitedUser, err)
	}
	attempts, err := testCluster.CountAudit(mark, AuditFilter{Verb: "create", User: limitedUser, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 1 {
		t.Fatalf("audited create attempts by %s = %d, want 1", limitedUser, attempts)
	}
	if _, err := testCluster.UserRESTConfig("nobody"); err == nil {
		t.Fatal("UserRESTConfig accepted a user that was never configured")
	}
}

// TestAuditFiltersByTheApplierUnlessToldOtherwise: the applier's
// kubeconfig and REST config act as ApplierUser, apart from the admin, and
// a filter without a user selects only the applier's requests.
func TestAuditFiltersByTheApplierUnlessToldOtherwise(t *testing.T) {
	ctx := t.Context()
	ns := testCluster.CreateNamespace(t)
	fromFile, err := clientcmd.BuildConfigFromFlags("", testCluster.ApplierKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*rest.Config{testCluster.RESTConfig(), testCluster.ApplierRESTConfig(), fromFile} {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lists := AuditFilter{Verb: "list", Resource: "configmaps", Namespace: ns}
	count := func(user string) int {
		t.Helper()
		f := lists
		f.User = user
		n, err := testCluster.CountAudit(mark, f)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := count(""); got != 2 {
		t.Errorf("LISTs matched by a filter without a user = %d, want the applier's 2", got)
	}
	if got, want := count(ApplierUser), count(""); got != want {
		t.Errorf("LISTs by %s = %d, want %d: the default is the applier", ApplierUser, got, want)
	}
	if got := count(AdminUser); got != 1 {
		t.Errorf("LISTs by %s = %d, want 1", AdminUser, got)
	}
	if got := count(AnyUser); got != 3 {
		t.Errorf("LISTs by any user = %d, want 3", got)
	}
}

func TestReadAuditLogSkipsPartialLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	line := func(id string) string {
		return `{"auditID":"` + id + `","stage":"RequestReceived","verb":"create","user":{"username":"admin"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"x"}}` + "\n"
	}
	first, second := line("a"), line("b")
	partial := strings.TrimSuffix(line("c"), "\n")[:40]
	if err := os.WriteFile(path, []byte(first+second+partial), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		mark AuditMark
		want []string
	}{
		"from the start, without the unfinished last line": {AuditMark{}, []string{"a", "b"}},
		"from a line boundary":                             {AuditMark{offset: int64(len(first))}, []string{"b"}},
		"from inside a line, skipping the rest of it":      {AuditMark{offset: int64(len(first) + 5)}, nil},
		"from the end": {AuditMark{offset: int64(len(first + second + partial))}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			events, err := ReadAuditLog(path, tc.mark)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range events {
				got = append(got, e.AuditID)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("audit IDs = %v, want %v", got, tc.want)
			}
		})
	}

	// Once the writer finishes the line, a reader that started at the
	// earlier end sees exactly the new event.
	mark := AuditMark{offset: int64(len(first + second))}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.TrimPrefix(line("c"), partial)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	events, err := ReadAuditLog(path, mark)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].AuditID != "c" || !(AuditFilter{Verb: "create", User: "admin"}).Match(events[0]) {
		t.Fatalf("events after completing the line = %v, want the create c", events)
	}
}

func TestReadAuditLogRejectsCorruptLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{not json}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAuditLog(path, AuditMark{}); err == nil {
		t.Fatal("a complete line that is not JSON was accepted")
	}
}
