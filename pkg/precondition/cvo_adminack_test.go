package precondition

// The admin-ack cases of the cluster-version-operator, restated as
// specifications of JudgeAdminAcks and ParseAdminGateName, under the CVO's
// case names. Read, not copied, from
// github.com/openshift/cluster-version-operator at commit
// 6e719331fb5863141397f35b1f47bed42148a6dd, pkg/risk/adminack/adminack_test.go
// (Test_gateApplicableToCurrentVersion, Test_checkAdminGate, Test_New).
// There each unacknowledged gate is an update risk named AdminAck-<key>,
// with a default documentation URL; here, as in the CVO's former
// pkg/cvo/upgradeable.go, gates are Upgradeable blockers grouped by reason,
// with the pending gates listed: every case whose `differs` is set states
// that difference of form. The cases' gates and acks are the CVO's.

import (
	"testing"

	"github.com/blang/semver/v4"
)

// TestCVOGateApplicableToCurrentVersion: Test_gateApplicableToCurrentVersion.
// A gate applies when its name parses and its major.minor is the version's.
func TestCVOGateApplicableToCurrentVersion(t *testing.T) {
	tests := []struct {
		name, gate, version string
		wantErr, applicable bool
		differs             string
	}{
		{name: "gate name invalid format no dot", gate: "ack-4>8-foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format 2 dots", gate: "ack-4..8-foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format does not start with ack", gate: "ck-4.8-foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format major version must be 4 or 5", gate: "ack-3.8-foo", version: "4.8.1", wantErr: false,
			differs: "any Semantic Version major is admitted, not only 4 and 5: the gate is well formed and applies to 3.8 only"},
		{name: "gate name invalid format minor version must be a number", gate: "ack-4.x-foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format no following dash", gate: "ack-4.8.1-foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format 2 following dashes", gate: "ack-4.x--foo", version: "4.8.1", wantErr: true},
		{name: "gate name invalid format no description following dash", gate: "ack-4.x-", version: "4.8.1", wantErr: true},
		{name: "gate name match", gate: "ack-4.8-foo", version: "4.8.1", applicable: true},
		{name: "gate name match big minor version", gate: "ack-4.123456-foo", version: "4.123456.0", applicable: true},
		{name: "gate name no match", gate: "ack-4.8-foo", version: "4.9.1"},
		{name: "gate name no match multi digit minor", gate: "ack-4.8-foo", version: "4.80.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			major, minor, err := ParseAdminGateName(tt.gate)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseAdminGateName(%q) error = %v, want an error: %v", tt.gate, err, tt.wantErr)
			}
			v := semver.MustParse(tt.version)
			if applicable := err == nil && major == v.Major && minor == v.Minor; applicable != tt.applicable {
				t.Errorf("applicable = %v, want %v", applicable, tt.applicable)
			}
			// The gate applies exactly when JudgeAdminAcks holds it pending.
			got := JudgeAdminAcks(tt.version, cvoGates(map[string]string{tt.gate: "text"}), cvoAcks(nil))
			if pending := len(got.Pending) == 1; pending != tt.applicable {
				t.Errorf("pending = %v, want %v", got.Pending, tt.applicable)
			}
			if named := len(got.Blockers) == 1 && got.Blockers[0].Reason == ReasonAdminAckConfigMapGateNameError; named != tt.wantErr {
				t.Errorf("blockers = %v, want a name error: %v", got.Blockers, tt.wantErr)
			}
		})
	}
}

func cvoGates(data map[string]string) AdminConfigMap {
	return AdminConfigMap{Name: DefaultAdminGates, Data: data, Shipped: true}
}

func cvoAcks(data map[string]string) AdminConfigMap {
	return AdminConfigMap{Name: DefaultAdminAcks, Data: data, Shipped: true}
}

// TestCVOAdminAcks: Test_checkAdminGate and Test_New.
func TestCVOAdminAcks(t *testing.T) {
	const sigstore = "This cluster has mirrors configured. 4.21 will require Sigstore signatures for quay.io/openshift-release-dev/ocp-release release verification. Please ensure that any registries configured as mirrors of quay.io/openshift-release-dev/ocp-release images contain the Sigstore signature images associated with any release images before updating to 4.21. See https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/nodes/nodes-sigstore-using.html#nodes-sigstore-prepare-for-4.21_nodes-sigstore-using for more details."
	const sigstoreURL = "https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/nodes/nodes-sigstore-using.html#nodes-sigstore-prepare-for-4.21_nodes-sigstore-using"
	const sigstoreGate = "ack-4.20-sigstore-in-4.21"
	const perReason = "unacknowledged gates are one AdminAckRequired blocker with their texts joined, and a pending gate without an https URL has none, where the CVO makes a risk per gate with a default docs URL"
	const valueError = "an empty gate is a value-error blocker, not a pending gate (the CVO: risk AdminAck-<key> with the same message)"
	notFound := func(name, namespace string) string {
		return "the CVO's former reason and text: it now makes risk AdminAckUnknown \"Failed to retrieve ConfigMap " + name +
			" from namespace " + namespace + ": configmap \\\"" + name + "\\\" not found\""
	}
	absent := func(cm AdminConfigMap) AdminConfigMap { cm.Data, cm.Absent = nil, true; return cm }
	tests := []struct {
		name     string
		version  string
		gates    AdminConfigMap
		acks     AdminConfigMap
		pending  []AdminGate
		blockers []AdminAckBlocker
		differs  string
	}{
		{
			name: "valid gate not acknowledged", version: "4.20.15",
			gates: cvoGates(map[string]string{sigstoreGate: sigstore}), acks: cvoAcks(nil),
			pending:  []AdminGate{{Key: sigstoreGate, Version: "4.20", Text: sigstore, URL: sigstoreURL}},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, sigstore}},
		},
		{
			name: "valid gate not acknowledged, newline at end of URI", version: "4.20.15",
			gates: cvoGates(map[string]string{sigstoreGate: "This cluster has mirrors configured. See https://example.com/\nfor details."}), acks: cvoAcks(nil),
			pending: []AdminGate{{Key: sigstoreGate, Version: "4.20",
				Text: "This cluster has mirrors configured. See https://example.com/\nfor details.", URL: "https://example.com/"}},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, "This cluster has mirrors configured. See https://example.com/\nfor details."}},
		},
		{
			name: "valid gate acknowledged", version: "4.20.15",
			gates: cvoGates(map[string]string{sigstoreGate: sigstore}), acks: cvoAcks(map[string]string{sigstoreGate: "true"}),
		},
		{
			name: "admin ack gate does not apply to version", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.8-test": "Testing"}), acks: cvoAcks(nil),
		},
		{
			name: "admin-gates configmap gate does not have value", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-test": ""}), acks: cvoAcks(nil),
			blockers: []AdminAckBlocker{{ReasonAdminAckConfigMapGateValueError, "admin-gates configmap gate ack-4.21-test must contain a non-empty value."}},
			differs:  valueError,
		},
		{
			name: "admin ack required", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-test": "Description."}), acks: cvoAcks(nil),
			pending:  []AdminGate{{Key: "ack-4.21-test", Version: "4.21", Text: "Description."}},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, "Description."}},
			differs:  perReason,
		},
		{
			name: "admin ack required and admin ack gate does not apply to version", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-test": "Description A.", "ack-4.22-test": "Description B."}), acks: cvoAcks(nil),
			pending:  []AdminGate{{Key: "ack-4.21-test", Version: "4.21", Text: "Description A."}},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, "Description A."}},
			differs:  perReason,
		},
		{
			name: "admin ack required and configmap gate does not have value", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-with-description": "Description.", "ack-4.21-without-description": ""}), acks: cvoAcks(nil),
			pending: []AdminGate{{Key: "ack-4.21-with-description", Version: "4.21", Text: "Description."}},
			blockers: []AdminAckBlocker{
				{ReasonAdminAckConfigMapGateValueError, "admin-gates configmap gate ack-4.21-without-description must contain a non-empty value."},
				{ReasonAdminAckRequired, "Description."},
			},
			differs: perReason + "; " + valueError,
		},
		{
			name: "multiple admin acks required", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-b": "Description 2.", "ack-4.21-a": "Description 1.", "ack-4.21-c": "Description 3."}), acks: cvoAcks(nil),
			pending: []AdminGate{
				{Key: "ack-4.21-a", Version: "4.21", Text: "Description 1."},
				{Key: "ack-4.21-b", Version: "4.21", Text: "Description 2."},
				{Key: "ack-4.21-c", Version: "4.21", Text: "Description 3."},
			},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, "Description 1. Description 2. Description 3."}},
			differs:  perReason,
		},
		{
			name: "admin ack found", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-test": "Description."}), acks: cvoAcks(map[string]string{"ack-4.21-test": "true"}),
		},
		{
			name: "admin ack 2 of 3 found", version: "4.21.0",
			gates:    cvoGates(map[string]string{"ack-4.21-a": "Description 1.", "ack-4.21-b": "Description 2.", "ack-4.21-c": "Description 3."}),
			acks:     cvoAcks(map[string]string{"ack-4.21-a": "true", "ack-4.21-c": "true"}),
			pending:  []AdminGate{{Key: "ack-4.21-b", Version: "4.21", Text: "Description 2."}},
			blockers: []AdminAckBlocker{{ReasonAdminAckRequired, "Description 2."}},
			differs:  perReason,
		},
		{
			name: "multiple admin acks found", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-a": "Description 1.", "ack-4.21-b": "Description 2.", "ack-4.21-c": "Description 3."}),
			acks:  cvoAcks(map[string]string{"ack-4.21-a": "true", "ack-4.21-b": "true", "ack-4.21-c": "true"}),
		},
		{
			name: "admin-acks configmap not found", version: "4.21.0",
			gates: cvoGates(map[string]string{"ack-4.21-a": "Description 1."}), acks: absent(cvoAcks(nil)),
			blockers: []AdminAckBlocker{{ReasonUnableToAccessAdminAcksConfigMap, "admin-acks configmap not found."}},
			differs:  notFound("admin-acks", "openshift-config"),
		},
		{
			name: "admin-gates configmap not found", version: "4.21.0",
			gates: absent(cvoGates(nil)), acks: absent(cvoAcks(nil)),
			blockers: []AdminAckBlocker{{ReasonUnableToAccessAdminGatesConfigMap, "admin-gates configmap not found."}},
			differs:  notFound("admin-gates", "openshift-config-managed"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JudgeAdminAcks(tt.version, tt.gates, tt.acks)
			if len(got.Pending) != len(tt.pending) {
				t.Fatalf("pending = %+v, want %+v", got.Pending, tt.pending)
			}
			for i := range tt.pending {
				if got.Pending[i] != tt.pending[i] {
					t.Errorf("pending[%d] = %+v, want %+v", i, got.Pending[i], tt.pending[i])
				}
			}
			if len(got.Blockers) != len(tt.blockers) {
				t.Fatalf("blockers = %+v, want %+v", got.Blockers, tt.blockers)
			}
			for i := range tt.blockers {
				if got.Blockers[i] != tt.blockers[i] {
					t.Errorf("blockers[%d] = %+v, want %+v", i, got.Blockers[i], tt.blockers[i])
				}
			}
		})
	}
}
