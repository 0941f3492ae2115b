package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

const (
	cliGate     = "ack-4.20-read-this"
	cliGateText = "4.21 removes an API: see https://example.com/removals first."
)

// gatedCluster is a cluster on 4.20.3 whose admin-gates holds gates.
func gatedCluster(gates, acks map[string]string) (*kubefake.Clientset, *configv1.ClusterVersion) {
	kube := kubefake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: precondition.DefaultAdminGates.Namespace, Name: precondition.DefaultAdminGates.Name}, Data: gates},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: precondition.DefaultAdminAcks.Namespace, Name: precondition.DefaultAdminAcks.Name}, Data: acks},
	)
	cv := &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{
		Desired: configv1.Release{Version: "4.20.3"},
		History: []configv1.UpdateHistory{{Version: "4.20.3", State: configv1.CompletedUpdate}},
	}}
	return kube, cv
}

func TestLiveAdminAcks(t *testing.T) {
	gates := map[string]string{cliGate: cliGateText, "ack-4.19-old": "past", "not-a-gate": "x"}
	tests := map[string]struct {
		target   string
		acks     map[string]string
		pending  int
		problems int
		blocks   bool
	}{
		"a minor is blocked":                   {target: "4.21.0", pending: 1, problems: 1, blocks: true},
		"a major is blocked":                   {target: "5.0.0", pending: 1, problems: 1, blocks: true},
		"a z-stream is not":                    {target: "4.20.4", pending: 1, problems: 1},
		"no update planned: listed, no blocks": {target: "", pending: 1, problems: 1},
		"acknowledged: only the problem is left, and it still blocks a minor": {
			target: "4.21.0", acks: map[string]string{cliGate: "true"}, problems: 1, blocks: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			kube, cv := gatedCluster(gates, tt.acks)
			got := liveAdminAcks(context.Background(), kube, cv, tt.target)
			if len(got.Pending) != tt.pending || len(got.Problems) != tt.problems || got.Blocks != tt.blocks {
				t.Fatalf("got %+v, want %d pending, %d problems, blocks %v", got, tt.pending, tt.problems, tt.blocks)
			}
			if tt.pending > 0 && (got.Pending[0].Key != cliGate || got.Pending[0].URL != "https://example.com/removals") {
				t.Errorf("pending %+v", got.Pending[0])
			}
			if tt.problems > 0 && !strings.HasPrefix(got.Problems[0], precondition.ReasonAdminAckConfigMapGateNameError+": ") {
				t.Errorf("problem %q", got.Problems[0])
			}
		})
	}
	t.Run("no ClusterVersion: nothing applies", func(t *testing.T) {
		kube, _ := gatedCluster(gates, nil)
		if got := liveAdminAcks(context.Background(), kube, nil, "4.21.0"); len(got.Pending)+len(got.Problems) != 0 || got.Blocks {
			t.Errorf("got %+v", got)
		}
	})
}

func TestAdminAcksText(t *testing.T) {
	kube, cv := gatedCluster(map[string]string{cliGate: cliGateText}, nil)
	var b bytes.Buffer
	writeAdminAcks(&b, liveAdminAcks(context.Background(), kube, cv, "4.21.0"))
	text := b.String()
	for _, want := range []string{
		"they block the update to 4.21.0",
		cliGate + ": " + cliGateText,
		`oc -n openshift-config patch configmap admin-acks --type=merge --patch '{"data":{"` + cliGate + `":"true"}}'`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}

	b.Reset()
	writeAdminAcks(&b, liveAdminAcks(context.Background(), kube, cv, "4.20.4"))
	if !strings.Contains(b.String(), "they do not block the update to 4.20.4") {
		t.Errorf("a z-stream must read as not blocked:\n%s", b.String())
	}

	t.Log("status lists them too")
	b.Reset()
	writeStatusText(&b, statusJSON{Current: "4.20.3", AdminAcks: liveAdminAcks(context.Background(), kube, cv, "")}, cv.Status.History[0].StartedTime.Time)
	if !strings.Contains(b.String(), "they hold back minor and major updates") || !strings.Contains(b.String(), cliGate) {
		t.Errorf("status does not list the gate:\n%s", b.String())
	}

	b.Reset()
	writeAdminAcks(&b, planAdminAcks{})
	if b.Len() != 0 {
		t.Errorf("nothing to say, but wrote %q", b.String())
	}
}

func TestAdminAcksJSONListsAreNeverNull(t *testing.T) {
	got, err := json.Marshal(planAcceptance{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"adminAcks":{"pending":[],"problems":[],"blocks":false}`) {
		t.Errorf("got %s", got)
	}
}
