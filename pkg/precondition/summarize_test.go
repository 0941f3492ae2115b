package precondition

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
)

func TestSummarize(t *testing.T) {
	plain := errors.New("random error")
	blockingErr := &Error{
		Nested:  fs.ErrPermission,
		Reason:  deletionReason,
		Message: deletionMessage,
		Name:    NameUpgradeable,
	}
	warning := &Error{
		Reason:             ReasonClusterVersionOverridesSet,
		Message:            OverridesMessage,
		Name:               NameUpgradeable,
		NonBlockingWarning: true,
	}
	rollbackWarning := &Error{
		Reason:             ReasonInvalidCurrentVersion,
		Message:            "the current target version is odd",
		Name:               NameRollback,
		NonBlockingWarning: true,
	}
	blockingLine := `Precondition "ClusterVersionUpgradeable" failed because of "ResourceDeletionInProgress": ` + deletionMessage
	warningLine := `Precondition "ClusterVersionUpgradeable" failed because of "ClusterVersionOverridesSet": ` + OverridesMessage
	rollbackLine := `Precondition "ClusterVersionRollback" failed because of "InvalidCurrentVersion": the current target version is odd`

	tests := map[string]struct {
		errs         []error
		force        bool
		wantBlocking bool
		wantMessage  string // empty means no error
		wantForced   bool
		wantChecks   []string
	}{
		"nil errors give no error": {},
		"an empty list gives no error": {
			errs: []error{},
		},
		"a list of nil errors gives no error": {
			errs: []error{nil, nil},
		},
		"a plain error blocks with its own message": {
			errs:         []error{plain},
			wantBlocking: true,
			wantMessage:  "random error",
		},
		"a plain error forced through does not block and is prefixed": {
			errs:        []error{plain},
			force:       true,
			wantMessage: "Forced through blocking failures: random error",
			wantForced:  true,
		},
		"a blocking precondition error names its check and reason": {
			errs:         []error{blockingErr},
			wantBlocking: true,
			wantMessage:  blockingLine,
			wantChecks:   []string{NameUpgradeable},
		},
		"a blocking precondition error forced through becomes an accepted risk": {
			errs:        []error{blockingErr},
			force:       true,
			wantMessage: "Forced through blocking failures: " + blockingLine,
			wantForced:  true,
			wantChecks:  []string{NameUpgradeable},
		},
		"a warning does not block without force": {
			errs:        []error{warning},
			wantMessage: warningLine,
			wantChecks:  []string{NameUpgradeable},
		},
		"a warning with force is not marked as forced": {
			errs:        []error{warning},
			force:       true,
			wantMessage: warningLine,
			wantChecks:  []string{NameUpgradeable},
		},
		"two warnings use the multiple format and do not block": {
			errs:        []error{rollbackWarning, warning},
			wantMessage: "Multiple precondition checks failed:\n* " + rollbackLine + "\n* " + warningLine,
			wantChecks:  []string{NameRollback, NameUpgradeable},
		},
		"a warning and a blocking error use the multiple format and block": {
			errs:         []error{rollbackWarning, blockingErr},
			wantBlocking: true,
			wantMessage:  "Multiple precondition checks failed:\n* " + rollbackLine + "\n* " + blockingLine,
			wantChecks:   []string{NameRollback, NameUpgradeable},
		},
		"a warning and a blocking error forced through are prefixed once": {
			errs:        []error{rollbackWarning, blockingErr},
			force:       true,
			wantMessage: "Forced through blocking failures: Multiple precondition checks failed:\n* " + rollbackLine + "\n* " + blockingLine,
			wantForced:  true,
			wantChecks:  []string{NameRollback, NameUpgradeable},
		},
		"a plain error among precondition errors is listed by its message and not named as a check": {
			errs:         []error{warning, plain},
			wantBlocking: true,
			wantMessage:  "Multiple precondition checks failed:\n* " + warningLine + "\n* random error",
			wantChecks:   []string{NameUpgradeable},
		},
		"two failures of one check name it once": {
			errs:         []error{warning, blockingErr},
			wantBlocking: true,
			wantMessage:  "Multiple precondition checks failed:\n* " + warningLine + "\n* " + blockingLine,
			wantChecks:   []string{NameUpgradeable},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			blocking, err := Summarize(tt.errs, tt.force)
			if blocking != tt.wantBlocking {
				t.Errorf("blocking: want %v, got %v", tt.wantBlocking, blocking)
			}
			if tt.wantMessage == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error %q, got none", tt.wantMessage)
			}
			if err.Error() != tt.wantMessage {
				t.Errorf("message:\nwant %q\n got %q", tt.wantMessage, err.Error())
			}
			var summary *SummaryError
			if !errors.As(err, &summary) {
				t.Fatalf("want a *SummaryError, got %T", err)
			}
			if summary.Blocking != blocking || summary.Forced != tt.wantForced {
				t.Errorf("summary: want Blocking=%v Forced=%v, got Blocking=%v Forced=%v", blocking, tt.wantForced, summary.Blocking, summary.Forced)
			}
			if got := summary.Checks(); !reflect.DeepEqual(got, tt.wantChecks) {
				t.Errorf("checks: want %q, got %q", tt.wantChecks, got)
			}
			for _, e := range tt.errs {
				if e != nil && !errors.Is(err, e) {
					t.Errorf("the summary does not reach %v through errors.Is", e)
				}
			}
		})
	}
}

func TestSummarizeKeepsNestedErrorsReachable(t *testing.T) {
	cause := fs.ErrPermission
	errs := []error{
		&Error{Name: NameRollback, Reason: ReasonLowDesiredVersion, Message: "too low"},
		&Error{Name: NameUpgradeable, Reason: ReasonUnknownError, Message: "could not judge", Nested: cause},
	}
	_, err := Summarize(errs, false)

	if !errors.Is(err, cause) {
		t.Errorf("errors.Is does not reach the nested cause %v", cause)
	}
	var pErr *Error
	if !errors.As(err, &pErr) || pErr.Reason != ReasonLowDesiredVersion {
		t.Errorf("errors.As should find the first *Error (LowDesiredVersion), got %+v", pErr)
	}
	var summary *SummaryError
	if !errors.As(err, &summary) || len(summary.Errors) != 2 {
		t.Fatalf("want a *SummaryError holding both failures, got %#v", err)
	}
	if summary.Errors[0] != errs[0] || summary.Errors[1] != errs[1] {
		t.Errorf("the summary must keep each failure unchanged and in order")
	}
}

func TestDescribe(t *testing.T) {
	tests := map[string]struct {
		err  error
		want string
	}{
		"a precondition error names its check and reason": {
			err:  &Error{Name: NameGiantHop, Reason: ReasonMajorVersionUpdate, Message: "too far"},
			want: `Precondition "ClusterVersionGiantHop" failed because of "MajorVersionUpdate": too far`,
		},
		"a wrapped precondition error is still described as one": {
			err:  errors.Join(&Error{Name: NameGiantHop, Reason: ReasonMajorVersionUpdate, Message: "too far"}),
			want: `Precondition "ClusterVersionGiantHop" failed because of "MajorVersionUpdate": too far`,
		},
		"a plain error keeps its message": {
			err:  errors.New("boom"),
			want: "boom",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Describe(tt.err); got != tt.want {
				t.Errorf("want %q, got %q", tt.want, got)
			}
		})
	}
}
