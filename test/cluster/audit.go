package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Audit stages that the apiserver writes for every request. Watches also
// get ResponseStarted.
const (
	// AuditStageRequestReceived is written before the request is served. In
	// blocking audit mode it is on disk before the client can see the
	// response, which makes counts of this stage exact.
	AuditStageRequestReceived = "RequestReceived"
	// AuditStageResponseComplete carries the response status. It is written
	// after the response, so it can lag the client by a moment.
	AuditStageResponseComplete = "ResponseComplete"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event that tests use.
type AuditEvent struct {
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	Level                    string            `json:"level"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     AuditUser         `json:"user"`
	ImpersonatedUser         *AuditUser        `json:"impersonatedUser,omitempty"`
	UserAgent                string            `json:"userAgent"`
	ObjectRef                *AuditObjectRef   `json:"objectRef,omitempty"`
	ResponseStatus           *AuditStatus      `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
	// RequestObject is the request's body, logged for DELETEs only.
	RequestObject json.RawMessage `json:"requestObject,omitempty"`
}

// AuditUser is the authenticated identity of a request.
type AuditUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// AuditObjectRef names the object a request is about.
type AuditObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// AuditStatus is the response status of a completed request.
type AuditStatus struct {
	Code    int    `json:"code"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// writeVerbs change state in the apiserver.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// IsWrite reports whether the event's verb changes state.
func (e AuditEvent) IsWrite() bool { return slices.Contains(writeVerbs, e.Verb) }

// String renders the event for test failure messages, e.g.
// "create configmaps ns/name by admin (RequestReceived)".
func (e AuditEvent) String() string {
	target := e.RequestURI
	if r := e.ObjectRef; r != nil {
		target = r.Resource
		if r.Subresource != "" {
			target += "/" + r.Subresource
		}
		if r.APIGroup != "" {
			target += "." + r.APIGroup
		}
		switch {
		case r.Namespace != "" && r.Name != "":
			target += " " + r.Namespace + "/" + r.Name
		case r.Namespace != "":
			target += " in " + r.Namespace
		case r.Name != "":
			target += " " + r.Name
		}
	}
	return fmt.Sprintf("%s %s by %s (%s)", e.Verb, target, e.User.Username, e.Stage)
}

// AnyUser, as AuditFilter.User, matches every user.
const AnyUser = "*"

// AuditFilter selects audit events. Empty fields match anything, except
// Stage and User, which have defaults.
type AuditFilter struct {
	// Stage defaults to AuditStageRequestReceived: one event per request,
	// always on disk once the client has its response.
	Stage string
	Verb  string
	// User defaults to ApplierUser: an assertion is about the applier's own
	// requests, and kube-controller-manager makes requests of its own (the
	// namespace controller empties a deleted namespace, the garbage
	// collector deletes dependents), as does the test's setup. AnyUser
	// matches everyone.
	User        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	// Name is absent from RequestReceived events of creates: the apiserver
	// reads it from the body afterwards. Count creates by name at
	// AuditStageResponseComplete, through WaitForAudit.
	Name string
	// WritesOnly keeps create, update, patch, delete and deletecollection.
	WritesOnly bool
}

// Match reports whether e passes the filter.
func (f AuditFilter) Match(e AuditEvent) bool {
	stage := f.Stage
	if stage == "" {
		stage = AuditStageRequestReceived
	}
	user := f.User
	switch user {
	case "":
		user = ApplierUser
	case AnyUser:
		user = ""
	}
	if e.Stage != stage || !matches(f.Verb, e.Verb) || !matches(user, e.User.Username) {
		return false
	}
	if f.WritesOnly && !e.IsWrite() {
		return false
	}
	var ref AuditObjectRef
	if e.ObjectRef != nil {
		ref = *e.ObjectRef
	}
	return matches(f.APIGroup, ref.APIGroup) && matches(f.Resource, ref.Resource) &&
		matches(f.Subresource, ref.Subresource) && matches(f.Namespace, ref.Namespace) &&
		matches(f.Name, ref.Name)
}

func matches(want, got string) bool { return want == "" || want == got }

// FilterAudit returns the events that match f, in log order.
func FilterAudit(events []AuditEvent, f AuditFilter) []AuditEvent {
	var out []AuditEvent
	for _, e := range events {
		if f.Match(e) {
			out = append(out, e)
		}
	}
	return out
}

// AuditMark is a position in the audit log. The zero value is the start.
type AuditMark struct{ offset int64 }

// AuditMark returns the current end of the audit log. Every request whose
// response the caller has already received is before the mark (at stage
// RequestReceived), and every request it sends afterwards is after it.
func (c *Cluster) AuditMark() (AuditMark, error) {
	st, err := os.Stat(c.auditLog)
	if err != nil {
		return AuditMark{}, fmt.Errorf("audit log: %w", err)
	}
	return AuditMark{offset: st.Size()}, nil
}

// AuditEvents returns every complete event in the audit log.
func (c *Cluster) AuditEvents() ([]AuditEvent, error) {
	return ReadAuditLog(c.auditLog, AuditMark{})
}

// AuditEventsSince returns the complete events written after m, by every
// user; assertions usually want AuditSince, which filters.
func (c *Cluster) AuditEventsSince(m AuditMark) ([]AuditEvent, error) {
	return ReadAuditLog(c.auditLog, m)
}

// AuditSince returns the events after m that match f, in log order: by
// default the applier's requests (see AuditFilter.User).
func (c *Cluster) AuditSince(m AuditMark, f AuditFilter) ([]AuditEvent, error) {
	events, err := c.AuditEventsSince(m)
	if err != nil {
		return nil, err
	}
	return FilterAudit(events, f), nil
}

// CountAudit counts the events after m that match f.
func (c *Cluster) CountAudit(m AuditMark, f AuditFilter) (int, error) {
	events, err := c.AuditSince(m, f)
	return len(events), err
}

// WaitForAudit polls the log until at least want events after m match f,
// then returns all that match. Use it for AuditStageResponseComplete, whose
// events can trail the responses by a moment; ctx bounds the wait.
func (c *Cluster) WaitForAudit(ctx context.Context, m AuditMark, f AuditFilter, want int) ([]AuditEvent, error) {
	var matched []AuditEvent
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		events, err := c.AuditEventsSince(m)
		if err != nil {
			return false, err
		}
		matched = FilterAudit(events, f)
		return len(matched) >= want, nil
	})
	if err != nil {
		return matched, fmt.Errorf("audit events matching %+v: got %d, want %d: %w", f, len(matched), want, err)
	}
	return matched, nil
}

// ReadAuditLog parses the JSON-lines audit log at path from mark m on. A
// last line without its newline is still being written and is left out; a
// mark that falls inside a line skips the rest of that line.
func ReadAuditLog(path string, m AuditMark) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()

	start := m.offset
	if start > 0 {
		// Start on a line boundary: if the byte before the mark is not a
		// newline, the mark is inside a line that belongs before it.
		prev := make([]byte, 1)
		if _, err := f.ReadAt(prev, start-1); err != nil {
			return nil, fmt.Errorf("audit log %s: mark at %d: %w", path, start, err)
		}
		if prev[0] != '\n' {
			start-- // let the line reader consume the partial line, then drop it
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	skipFirst := start != m.offset
	var events []AuditEvent
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// Whatever is left has no newline yet: a write in progress.
			return events, nil
		}
		if err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		if skipFirst {
			skipFirst = false
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log %s: line %d after the mark: %w", path, lineNo, err)
		}
		events = append(events, e)
	}
}
