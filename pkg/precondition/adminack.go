package precondition

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Admin acknowledgements, as the CVO has them (pkg/risk/adminack; before
// 2026-04 pkg/cvo/upgradeable.go): a release ships gates in one ConfigMap,
// admins acknowledge them in another, and an unacknowledged gate for the
// cluster's current major.minor sets Upgradeable=False, which holds back
// minor and major updates (Upgradeable) and lets z-streams through. The
// rule lives here, beside the other acceptance rules; the operator reads
// the ConfigMaps and writes the condition.

// Reasons of Upgradeable=False that the admin gates give, the CVO's.
const (
	ReasonAdminAckRequired                  = "AdminAckRequired"
	ReasonAdminAckConfigMapGateNameError    = "AdminAckConfigMapGateNameError"
	ReasonAdminAckConfigMapGateValueError   = "AdminAckConfigMapGateValueError"
	ReasonUnableToAccessAdminGatesConfigMap = "UnableToAccessAdminGatesConfigMap"
	ReasonUnableToAccessAdminAcksConfigMap  = "UnableToAccessAdminAcksConfigMap"
)

// The CVO's ConfigMaps: the release's gates, and the admins' answers.
var (
	DefaultAdminGates = types.NamespacedName{Namespace: "openshift-config-managed", Name: "admin-gates"}
	DefaultAdminAcks  = types.NamespacedName{Namespace: "openshift-config", Name: "admin-acks"}
)

// AdminGateNamePattern is the form of a gate key: the CVO's
// ^ack-([4-5][.][0-9]{1,})-[^-], for any Semantic Version major.minor.
const AdminGateNamePattern = `^ack-(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)-[^-]`

var (
	adminGateName = regexp.MustCompile(AdminGateNamePattern)
	httpsURL      = regexp.MustCompile(`https://[^[:space:]]+`)
)

// maxAdminGateTextBytes bounds one gate's text in a message: the text comes
// from the cluster, and the whole condition message has its own budget.
const maxAdminGateTextBytes = 1 << 10

// AdminGate is one gate of the admin-gates ConfigMap.
type AdminGate struct {
	// Key is the data key, ack-<major>.<minor>-<text>; admins acknowledge
	// it under the same key.
	Key string `json:"key"`
	// Version is the major.minor the gate applies to.
	Version string `json:"version"`
	// Text is the value, bounded: what the admin must know.
	Text string `json:"text"`
	// URL is the first https URL in Text, "" without one.
	URL string `json:"url,omitempty"`
}

// ParseAdminGateName returns the major.minor a gate key applies to, or an
// error naming the form it must have.
func ParseAdminGateName(key string) (major, minor uint64, err error) {
	m := adminGateName.FindStringSubmatch(key)
	if m == nil {
		return 0, 0, fmt.Errorf("%s configmap gate name %s has invalid format; must comply with %q",
			DefaultAdminGates.Name, key, AdminGateNamePattern)
	}
	// The pattern admits digits only, so only overflow fails.
	if major, err = strconv.ParseUint(m[1], 10, 64); err == nil {
		minor, err = strconv.ParseUint(m[2], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s configmap gate name %s: version out of range: %w", DefaultAdminGates.Name, key, err)
	}
	return major, minor, nil
}

// FirstHTTPSURL is the link of a gate text: its first https URL.
func FirstHTTPSURL(text string) string {
	return httpsURL.FindString(text)
}

// AdminAckVersion is the version whose gates apply, as the CVO picks it:
// the newest completed release, or before one completed the first one
// requested; "" without history.
func AdminAckVersion(history []configv1.UpdateHistory) string {
	if v := LastCompletedVersion(history); v != "" {
		return v
	}
	if len(history) > 0 {
		return history[len(history)-1].Version
	}
	return ""
}

// AdminConfigMap is one of the two ConfigMaps as read.
type AdminConfigMap struct {
	// Name is where it was read.
	Name types.NamespacedName
	// Data is its data; nil when absent or unreadable.
	Data map[string]string
	// Absent is set when the ConfigMap does not exist.
	Absent bool
	// Err is why it could not be read, other than being absent.
	Err error
	// Shipped is set when the current release ships this ConfigMap. The
	// CVO's releases all ship both, so there an absent one was removed and
	// blocks as unreadable; a release that ships neither has no gates, and
	// an absent one then reads as empty.
	Shipped bool
}

// AdminAckBlocker is one reason the admin gates give for Upgradeable=False.
type AdminAckBlocker struct {
	Reason  string
	Message string
}

// AdminAcks is the judgement of the admin gates.
type AdminAcks struct {
	// Version is the version whose gates apply (AdminAckVersion).
	Version string
	// Pending are the gates that apply and are not acknowledged, by key.
	Pending []AdminGate
	// Blockers are the reasons for Upgradeable=False, one per reason as
	// the CVO groups them, in reason order; nil when updates may go on.
	Blockers []AdminAckBlocker
}

// JudgeAdminAcks applies the CVO's rule to the gates and acks as read,
// for a cluster whose gates apply at version (AdminAckVersion). Nothing
// applies before a version is known. A ConfigMap that cannot be read, or
// is absent though shipped, gives its UnableToAccess reason alone, as in
// the CVO. Otherwise every malformed key is a name error; and a gate for
// version's major.minor that is not acknowledged with "true" is required,
// or a value error when its text is empty.
func JudgeAdminAcks(version string, gates, acks AdminConfigMap) AdminAcks {
	out := AdminAcks{Version: version}
	if version == "" {
		return out
	}
	if b := unreadable(gates, ReasonUnableToAccessAdminGatesConfigMap); b != nil {
		out.Blockers = []AdminAckBlocker{*b}
		return out
	}
	if b := unreadable(acks, ReasonUnableToAccessAdminAcksConfigMap); b != nil {
		out.Blockers = []AdminAckBlocker{*b}
		return out
	}
	// Versions are validated when a release loads; should one not parse,
	// no gate matches it.
	current, versionErr := semver.Parse(version)
	messages := map[string][]string{}
	keys := make([]string, 0, len(gates.Data))
	for k := range gates.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		value := gates.Data[key]
		major, minor, err := ParseAdminGateName(key)
		if err != nil {
			messages[ReasonAdminAckConfigMapGateNameError] = append(messages[ReasonAdminAckConfigMapGateNameError], textwrap.Bound(err.Error(), maxAdminGateTextBytes))
			continue
		}
		if versionErr != nil || major != current.Major || minor != current.Minor {
			continue
		}
		if strings.TrimSpace(value) == "" {
			messages[ReasonAdminAckConfigMapGateValueError] = append(messages[ReasonAdminAckConfigMapGateValueError],
				fmt.Sprintf("%s configmap gate %s must contain a non-empty value.", DefaultAdminGates.Name, textwrap.Bound(key, maxAdminGateTextBytes)))
			continue
		}
		if acks.Data[key] == "true" {
			continue
		}
		text := textwrap.Bound(value, maxAdminGateTextBytes)
		out.Pending = append(out.Pending, AdminGate{Key: key, Version: fmt.Sprintf("%d.%d", major, minor), Text: text, URL: FirstHTTPSURL(text)})
		messages[ReasonAdminAckRequired] = append(messages[ReasonAdminAckRequired], text)
	}
	reasons := make([]string, 0, len(messages))
	for r := range messages {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		// The CVO joins the messages of one reason with spaces.
		out.Blockers = append(out.Blockers, AdminAckBlocker{Reason: r, Message: strings.Join(messages[r], " ")})
	}
	return out
}

// unreadable is the CVO's blocker for a ConfigMap it cannot use, nil when
// cm can be used.
func unreadable(cm AdminConfigMap, reason string) *AdminAckBlocker {
	switch {
	case cm.Err != nil:
		return &AdminAckBlocker{Reason: reason, Message: textwrap.Bound(
			fmt.Sprintf("Unable to access configmap %s, err=%v.", cm.Name.Name, cm.Err), maxAdminGateTextBytes)}
	case cm.Absent && cm.Shipped:
		return &AdminAckBlocker{Reason: reason, Message: fmt.Sprintf("%s configmap not found.", cm.Name.Name)}
	}
	return nil
}
