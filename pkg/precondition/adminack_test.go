package precondition

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestParseAdminGateName(t *testing.T) {
	tests := []struct {
		key          string
		major, minor uint64
		bad          bool
	}{
		{key: "ack-4.8-kube-1.22-api-removals-in-4.9", major: 4, minor: 8},
		{key: "ack-1.0-x", major: 1, minor: 0},
		{key: "ack-12.34-notes", major: 12, minor: 34},
		{key: "ack-0.1-early", major: 0, minor: 1},
		{key: "ack-4.8", bad: true},                      // no text
		{key: "ack-4.8-", bad: true},                     // empty text
		{key: "ack-4.8--dash", bad: true},                // text starts with a dash
		{key: "ack-4-x", bad: true},                      // no minor
		{key: "ack-4.8.1-x", bad: true},                  // a patch level
		{key: "ack-04.8-x", bad: true},                   // leading zero, not Semantic Versioning
		{key: "ack-4.08-x", bad: true},                   // leading zero
		{key: "ACK-4.8-x", bad: true},                    // case matters
		{key: "x-ack-4.8-x", bad: true},                  // anchored
		{key: "ack-v4.8-x", bad: true},                   // no v prefix
		{key: "ack-99999999999999999999.1-x", bad: true}, // overflow
		{key: "", bad: true},
	}
	for _, tt := range tests {
		major, minor, err := ParseAdminGateName(tt.key)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: want an error, got %d.%d", tt.key, major, minor)
			} else if !strings.Contains(err.Error(), "admin-gates configmap gate name") {
				t.Errorf("%q: error %q does not say which gate is malformed", tt.key, err)
			}
			continue
		}
		if err != nil || major != tt.major || minor != tt.minor {
			t.Errorf("%q: got %d.%d, %v; want %d.%d", tt.key, major, minor, err, tt.major, tt.minor)
		}
	}
}

func TestFirstHTTPSURL(t *testing.T) {
	tests := map[string]string{
		"see https://example.com/a and https://example.com/b": "https://example.com/a",
		"http://insecure.example.com only":                    "",
		"https://example.com/x\nnext line":                    "https://example.com/x",
		"no link":                                             "",
	}
	for text, want := range tests {
		if got := FirstHTTPSURL(text); got != want {
			t.Errorf("FirstHTTPSURL(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestAdminAckVersion(t *testing.T) {
	h := func(v string, s configv1.UpdateState) configv1.UpdateHistory {
		return configv1.UpdateHistory{Version: v, State: s}
	}
	tests := map[string]struct {
		history []configv1.UpdateHistory
		want    string
	}{
		"no history":                           {nil, ""},
		"an install in progress: its version":  {[]configv1.UpdateHistory{h("1.0.0", configv1.PartialUpdate)}, "1.0.0"},
		"an update in progress: the completed": {[]configv1.UpdateHistory{h("1.1.0", configv1.PartialUpdate), h("1.0.2", configv1.CompletedUpdate)}, "1.0.2"},
		"never completed: the first requested": {[]configv1.UpdateHistory{h("1.1.0", configv1.PartialUpdate), h("1.0.0", configv1.PartialUpdate)}, "1.0.0"},
	}
	for name, tt := range tests {
		if got := AdminAckVersion(tt.history); got != tt.want {
			t.Errorf("%s: got %q, want %q", name, got, tt.want)
		}
	}
}

func TestJudgeAdminAcks(t *testing.T) {
	const (
		gate     = "ack-4.8-kube-removals"
		text     = "Kubernetes 1.22 removes APIs: see https://access.redhat.com/articles/6329921 before updating."
		link     = "https://access.redhat.com/articles/6329921"
		gate2    = "ack-4.8-another"
		text2    = "Another thing to know."
		oldGate  = "ack-4.7-old"
		nextGate = "ack-4.9-next"
	)
	gates := func(data map[string]string) AdminConfigMap {
		return AdminConfigMap{Name: DefaultAdminGates, Data: data, Shipped: true}
	}
	acks := func(data map[string]string) AdminConfigMap {
		return AdminConfigMap{Name: DefaultAdminAcks, Data: data, Shipped: true}
	}
	absent := func(cm AdminConfigMap) AdminConfigMap { cm.Data, cm.Absent = nil, true; return cm }
	notShipped := func(cm AdminConfigMap) AdminConfigMap { cm.Shipped = false; return cm }
	forbidden := errors.New(`configmaps "admin-gates" is forbidden`)

	tests := map[string]struct {
		version     string
		gates, acks AdminConfigMap
		want        []AdminAckBlocker
		pending     []string
	}{
		"no gates":           {version: "4.8.3", gates: gates(nil), acks: acks(nil)},
		"no version known":   {version: "", gates: gates(map[string]string{gate: text}), acks: absent(acks(nil))},
		"an unacked gate":    {version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: acks(nil), want: []AdminAckBlocker{{ReasonAdminAckRequired, text}}, pending: []string{gate}},
		"acked with true":    {version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: acks(map[string]string{gate: "true"})},
		"acked with other":   {version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: acks(map[string]string{gate: "True"}), want: []AdminAckBlocker{{ReasonAdminAckRequired, text}}, pending: []string{gate}},
		"another gate acked": {version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: acks(map[string]string{gate2: "true"}), want: []AdminAckBlocker{{ReasonAdminAckRequired, text}}, pending: []string{gate}},
		"other minors do not apply": {
			version: "4.8.0-rc.1", gates: gates(map[string]string{oldGate: "old", nextGate: "next"}), acks: acks(nil)},
		"another major does not apply": {version: "5.8.0", gates: gates(map[string]string{gate: text}), acks: acks(nil)},
		"any major applies, not only 4 and 5": {
			version: "12.3.4", gates: gates(map[string]string{"ack-12.3-x": "twelve"}), acks: acks(nil),
			want: []AdminAckBlocker{{ReasonAdminAckRequired, "twelve"}}, pending: []string{"ack-12.3-x"}},
		"two unacked gates: one reason, texts joined by key": {
			version: "4.8.3", gates: gates(map[string]string{gate: text, gate2: text2}), acks: acks(nil),
			want: []AdminAckBlocker{{ReasonAdminAckRequired, text2 + " " + text}}, pending: []string{gate2, gate}},
		"an empty value is a value error": {
			version: "4.8.3", gates: gates(map[string]string{gate: " "}), acks: acks(nil),
			want: []AdminAckBlocker{{ReasonAdminAckConfigMapGateValueError, "admin-gates configmap gate " + gate + " must contain a non-empty value."}}},
		"an empty value of another minor is no error": {version: "4.8.3", gates: gates(map[string]string{oldGate: ""}), acks: acks(nil)},
		"a malformed name is an error whatever the version": {
			version: "4.8.3", gates: gates(map[string]string{"ack-4.7": "x"}), acks: acks(nil),
			want: []AdminAckBlocker{{ReasonAdminAckConfigMapGateNameError, `admin-gates configmap gate name ack-4.7 has invalid format; must comply with "` + AdminGateNamePattern + `"`}}},
		"several reasons, each once, in reason order": {
			version: "4.8.3", gates: gates(map[string]string{gate: text, "bad": "x", gate2: ""}), acks: acks(nil),
			want: []AdminAckBlocker{
				{ReasonAdminAckConfigMapGateNameError, `admin-gates configmap gate name bad has invalid format; must comply with "` + AdminGateNamePattern + `"`},
				{ReasonAdminAckConfigMapGateValueError, "admin-gates configmap gate " + gate2 + " must contain a non-empty value."},
				{ReasonAdminAckRequired, text},
			},
			pending: []string{gate}},
		"unreadable gates": {
			version: "4.8.3", gates: AdminConfigMap{Name: DefaultAdminGates, Err: forbidden}, acks: acks(nil),
			want: []AdminAckBlocker{{ReasonUnableToAccessAdminGatesConfigMap, `Unable to access configmap admin-gates, err=configmaps "admin-gates" is forbidden.`}}},
		"unreadable acks hide the gates": {
			version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: AdminConfigMap{Name: DefaultAdminAcks, Err: forbidden},
			want: []AdminAckBlocker{{ReasonUnableToAccessAdminAcksConfigMap, `Unable to access configmap admin-acks, err=configmaps "admin-gates" is forbidden.`}}},
		"shipped gates absent: the CVO's not found": {
			version: "4.8.3", gates: absent(gates(nil)), acks: acks(nil),
			want: []AdminAckBlocker{{ReasonUnableToAccessAdminGatesConfigMap, "admin-gates configmap not found."}}},
		"shipped acks absent: the CVO's not found": {
			version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: absent(acks(nil)),
			want: []AdminAckBlocker{{ReasonUnableToAccessAdminAcksConfigMap, "admin-acks configmap not found."}}},
		"gates neither shipped nor present: nothing applies": {
			version: "4.8.3", gates: notShipped(absent(gates(nil))), acks: notShipped(absent(acks(nil)))},
		"acks neither shipped nor present: the gates apply unacked": {
			version: "4.8.3", gates: gates(map[string]string{gate: text}), acks: notShipped(absent(acks(nil))),
			want: []AdminAckBlocker{{ReasonAdminAckRequired, text}}, pending: []string{gate}},
		"an unparsable version matches no gate": {version: "latest", gates: gates(map[string]string{gate: text}), acks: acks(nil)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := JudgeAdminAcks(tt.version, tt.gates, tt.acks)
			if !reflect.DeepEqual(got.Blockers, tt.want) {
				t.Errorf("blockers:\n got %+v\nwant %+v", got.Blockers, tt.want)
			}
			var keys []string
			for _, g := range got.Pending {
				keys = append(keys, g.Key)
			}
			if !reflect.DeepEqual(keys, tt.pending) {
				t.Errorf("pending %v, want %v", keys, tt.pending)
			}
		})
	}

	t.Run("a pending gate carries its version, text and link", func(t *testing.T) {
		got := JudgeAdminAcks("4.8.3", gates(map[string]string{gate: text}), acks(nil))
		want := []AdminGate{{Key: gate, Version: "4.8", Text: text, URL: link}}
		if !reflect.DeepEqual(got.Pending, want) {
			t.Errorf("got %+v, want %+v", got.Pending, want)
		}
	})
	t.Run("texts from outside are bounded", func(t *testing.T) {
		long := strings.Repeat("x", 100_000)
		got := JudgeAdminAcks("4.8.3", gates(map[string]string{gate: long, gate2: long}), acks(nil))
		if n := len(got.Blockers[0].Message); n > 2*maxAdminGateTextBytes+1 {
			t.Errorf("message of %d bytes", n)
		}
		if !strings.Contains(got.Pending[0].Text, "bytes cut") {
			t.Errorf("a cut text must say so: %q", got.Pending[0].Text[len(got.Pending[0].Text)-40:])
		}
	})
}
