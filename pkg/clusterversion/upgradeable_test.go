package clusterversion

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCRDRemovalMessage(t *testing.T) {
	pending := func(crd string, objects int, err string) crdcompat.PendingRemoval {
		return crdcompat.PendingRemoval{Removal: crdcompat.Removal{CRD: crd, Version: "v1alpha1", RemovedIn: crdcompat.MinorVersion{Major: 1, Minor: 1}}, Objects: objects, Err: err}
	}
	msg := CRDRemovalMessage([]crdcompat.PendingRemoval{pending("b.example.com", 1, ""), pending("a.example.com", -1, "could not count its objects: boom\nsecond line")})
	for _, want := range []string{
		crdRemovalMessagePrefix + "a.example.com v1alpha1 (removed in 1.1; objects not counted: could not count its objects: boom second line), b.example.com v1alpha1 (removed in 1.1; 1 object, which may still be stored in it)",
		"run 'payload-applier crd migrate-storage NAME'",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}

	var many []crdcompat.PendingRemoval
	for i := range 13 {
		many = append(many, pending(fmt.Sprintf("c%02d.example.com", i), i, ""))
	}
	msg = CRDRemovalMessage(many)
	if !strings.Contains(msg, "c09.example.com v1alpha1") || strings.Contains(msg, "c10.example.com") || !strings.Contains(msg, ", and 3 more;") {
		t.Errorf("message names other than ten then counts the rest: %q", msg)
	}

	long := pending(strings.Repeat("x", 20000)+".example.com", 1, "")
	if msg := CRDRemovalMessage([]crdcompat.PendingRemoval{long}); len(msg) > maxCRDRemovalMessageBytes || !strings.Contains(msg, "bytes cut") {
		t.Errorf("an outsized message is %d bytes, want at most %d with a cut marker", len(msg), maxCRDRemovalMessageBytes)
	}
	if blockers := crdRemovalBlocker(nil); blockers != nil {
		t.Errorf("no pending removal must give no blocker: %v", blockers)
	}
}

func TestDecideUpgradeable(t *testing.T) {
	cm := func(name string, data map[string]string) precondition.AdminConfigMap {
		n := precondition.DefaultAdminGates
		if name == "acks" {
			n = precondition.DefaultAdminAcks
		}
		return precondition.AdminConfigMap{Name: n, Data: data}
	}
	gate := func(text string) precondition.AdminConfigMap { return cm("gates", map[string]string{testGate: text}) }
	removal := []crdcompat.PendingRemoval{{Removal: crdcompat.Removal{CRD: "widgets.example.com", Version: "v1alpha1", RemovedIn: crdcompat.MinorVersion{Major: 1, Minor: 1}}, Objects: 2}}
	tests := map[string]struct {
		obs       UpgradeableObservation
		pass      UpgradeablePass
		overrides []configv1.ComponentOverride
		reason    string
		message   string // the whole message, or "" to check fragments only
		fragments []string
	}{
		"nothing observed": {reason: ReasonAsExpected, message: "Minor and major version updates are allowed."},
		"a gate before any release applies to nothing": {
			obs: UpgradeableObservation{AdminGates: gate("")}, reason: ReasonAsExpected},
		"an empty gate of the current minor": {
			obs:    UpgradeableObservation{AdminAckVersion: "1.0.1", AdminGates: gate(""), AdminAcks: cm("acks", nil)},
			reason: precondition.ReasonAdminAckConfigMapGateValueError, message: "admin-gates configmap gate " + testGate + " must contain a non-empty value."},
		"an unacknowledged gate gives its text": {
			obs:    UpgradeableObservation{AdminAckVersion: "1.0.1", AdminGates: gate(testGateText), AdminAcks: cm("acks", nil)},
			reason: precondition.ReasonAdminAckRequired, message: testGateText},
		"an acknowledged gate": {
			obs:    UpgradeableObservation{AdminAckVersion: "1.0.1", AdminGates: gate(testGateText), AdminAcks: cm("acks", map[string]string{testGate: "true"})},
			reason: ReasonAsExpected},
		"another minor's gate": {
			obs:    UpgradeableObservation{AdminAckVersion: "1.1.0", AdminGates: gate(""), AdminAcks: cm("acks", nil)},
			reason: ReasonAsExpected},
		"shipped gates absent": {
			obs: UpgradeableObservation{AdminAckVersion: "1.0.1",
				AdminGates: precondition.AdminConfigMap{Name: precondition.DefaultAdminGates, Absent: true, Shipped: true}, AdminAcks: cm("acks", nil)},
			reason: precondition.ReasonUnableToAccessAdminGatesConfigMap, message: "admin-gates configmap not found."},
		"a pending CRD removal": {
			obs: UpgradeableObservation{CRDRemovals: removal}, reason: crdcompat.ReasonVersionRemovalPending,
			fragments: []string{crdRemovalMessagePrefix, "widgets.example.com v1alpha1 (removed in 1.1; 2 objects"}},
		"a ClusterOperator not upgradeable": {
			obs: UpgradeableObservation{Operators: []configv1.ClusterOperator{{ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
				Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
					{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "Busy", Message: "defragmenting"}}}}}},
			reason: ReasonOperatorsNotUpgrade, message: "Cluster operators are not upgradeable: etcd (Busy: defragmenting)"},
		"an unreadable ledger": {
			pass: UpgradeablePass{LedgerErr: errors.New("corrupt")}, reason: ReasonDeleteLedgerUnreadable, fragments: []string{"delete ledger is unreadable"}},
		"every source, in order, with the reappeared warned of": {
			obs: UpgradeableObservation{AdminAckVersion: "1.0.1", AdminGates: gate(testGateText), AdminAcks: cm("acks", nil), CRDRemovals: removal},
			pass: UpgradeablePass{Deletes: deletion.Summary{InProgress: []deletion.Record{rec("x", deletion.InProgress, "")},
				Reappeared: []deletion.Record{rec("back", deletion.Completed, "")}}, CleanupErr: errors.New("corrupt")},
			overrides: []configv1.ComponentOverride{{Kind: "Deployment", Name: "x", Unmanaged: true}},
			reason:    ReasonMultipleReasons,
			fragments: []string{
				"for multiple reasons:\n* Cluster minor or major version upgrades are not allowed while resource deletions are in progress: ConfigMap/ns/x\n* " +
					precondition.OverridesMessage + "\n* " + crdRemovalMessagePrefix,
				"\n* " + testGateText + "\n* Cluster minor or major version upgrades are not allowed while the operand cleanup state is unreadable",
				"\nWarning: reappeared after their delete, left in place and never deleted again: ConfigMap/ns/back"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := Upgradeable(tt.obs, tt.pass, tt.overrides)
			status := configv1.ConditionFalse
			if tt.reason == ReasonAsExpected {
				status = configv1.ConditionTrue
			}
			if c.Type != configv1.OperatorUpgradeable || c.Status != status || c.Reason != tt.reason {
				t.Fatalf("got %s %s/%s (%q), want %s/%s", c.Type, c.Status, c.Reason, c.Message, status, tt.reason)
			}
			if tt.message != "" && c.Message != tt.message {
				t.Errorf("message %q, want %q", c.Message, tt.message)
			}
			for _, f := range tt.fragments {
				if !strings.Contains(c.Message, f) {
					t.Errorf("message %q lacks %q", c.Message, f)
				}
			}
		})
	}
}

const (
	testGate     = "ack-1.0-read-the-notes"
	testGateText = "1.1 changes things: read https://example.com/notes before you update."
)
