package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/graph"

	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// planAdminAcks is what the cluster's admin gates say about a planned
// update: the live gates, which hold back leaving the current release, not
// the payload's, which only apply once it runs.
type planAdminAcks struct {
	// Pending are the gates for the cluster's current major.minor that no
	// admin has acknowledged.
	Pending []precondition.AdminGate `json:"pending"`
	// Problems are the other reasons the gates give for Upgradeable=False
	// (a malformed gate, an unreadable ConfigMap), as "Reason: message".
	Problems []string `json:"problems"`
	// Blocks is set when the update is minor or major, which Pending or
	// Problems hold back.
	Blocks bool `json:"blocks"`

	target string // the planned update's version, "" without one
}

// MarshalJSON keeps the lists non-null, as the plan contract promises.
func (a planAdminAcks) MarshalJSON() ([]byte, error) {
	type plain planAdminAcks
	if a.Pending == nil {
		a.Pending = []precondition.AdminGate{}
	}
	if a.Problems == nil {
		a.Problems = []string{}
	}
	return json.Marshal(plain(a))
}

// liveAdminAcks judges the cluster's admin gates for an update of cv to
// target ("" for none planned).
func liveAdminAcks(ctx context.Context, kube kubernetes.Interface, cv *configv1.ClusterVersion, target string) planAdminAcks {
	judged := operator.AdminAcks(ctx, kube, cv)
	out := planAdminAcks{Pending: judged.Pending, target: target}
	for _, b := range judged.Blockers {
		if b.Reason != precondition.ReasonAdminAckRequired {
			out.Problems = append(out.Problems, b.Reason+": "+b.Message)
		}
	}
	if len(judged.Blockers) > 0 && cv != nil && target != "" {
		// Classified as the Upgradeable check does: from the current target.
		kind, err := precondition.Classify(cv.Status.Desired.Version, target)
		out.Blocks = err == nil && (kind == precondition.UpdateMinor || kind == precondition.UpdateMajor)
	}
	return out
}

// writeAdminAcks tells people which gates await an ack and how to give it.
func writeAdminAcks(w io.Writer, a planAdminAcks) {
	target := a.target
	if len(a.Pending) == 0 && len(a.Problems) == 0 {
		return
	}
	holds := "they hold back minor and major updates"
	switch {
	case target != "" && a.Blocks:
		holds = "they block the update to " + target
	case target != "":
		holds = "they do not block the update to " + target + ", which stays within the minor"
	}
	fmt.Fprintf(w, "Admin gates of the cluster's current release (%s):\n", holds)
	for _, g := range a.Pending {
		fmt.Fprintf(w, "  %s: %s\n", g.Key, oneLine(g.Text))
	}
	for _, p := range a.Problems {
		fmt.Fprintf(w, "  %s\n", oneLine(p))
	}
	for _, g := range a.Pending {
		fmt.Fprintf(w, "  acknowledge: oc -n %s patch configmap %s --type=merge --patch '{\"data\":{\"%s\":\"true\"}}'\n",
			precondition.DefaultAdminAcks.Namespace, precondition.DefaultAdminAcks.Name, g.Key)
	}
}

// clusterAdminAcks reads the admin gates of the cluster, for a plan in
// mode of target.
func clusterAdminAcks(ctx context.Context, kube kubernetes.Interface, cc configclient.Interface, mode graph.Mode, target string) (planAdminAcks, error) {
	cv, err := readClusterVersion(ctx, cc)
	if err != nil || cv == nil {
		// judgeUpdate reported what matters; without one, no gate applies.
		return planAdminAcks{}, nil
	}
	if mode != graph.ModeUpdate {
		target = ""
	}
	return liveAdminAcks(ctx, kube, cv, target), nil
}
