package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
)

// TestApplyExitsThreeOnAnUnverifiedImage: a release image the operator
// refused for its verification exits 3, like a precondition; forced and
// applied, it exits 0.
func TestApplyExitsThreeOnAnUnverifiedImage(t *testing.T) {
	const image = "quay.io/example/release@sha256:0123"
	unverified := &signature.Error{Digest: "sha256:0123", Err: errors.New("no signature")}
	complete := &apply.SyncResult{Total: 1, Done: 1}
	tests := map[string]struct {
		out      operator.Outcome
		code     int
		contains string
	}{
		"refused, the current release reconciled": {
			out:  operator.Outcome{Applied: "1.0.0", VerifyErr: unverified, Result: complete},
			code: exitRefused, contains: "release " + image + " refused, nothing of it was applied: The update cannot be verified",
		},
		"refused before anything was read": {
			out:  operator.Outcome{RetrieveErr: &releaseimage.VerificationError{Ref: image, Digest: "sha256:0123", Err: unverified}},
			code: exitRefused, contains: "cannot be verified",
		},
		"forced and applied": {
			out:  operator.Outcome{Target: "1.0.1", Applied: "1.0.1", VerifyErr: unverified, AcceptedRisks: "forced", Result: complete},
			code: exitOK,
		},
		"not retrieved": {
			out:  operator.Outcome{Applied: "1.0.0", RetrieveErr: errors.New("MANIFEST_UNKNOWN"), Result: complete},
			code: exitUsage, contains: "release image " + image + " cannot be retrieved, nothing was applied from it: MANIFEST_UNKNOWN",
		},
	}
	for name, tc := range tests {
		err := applyExit(&tc.out, image)
		if code := exitCode(err); code != tc.code || (tc.contains != "" && !strings.Contains(err.Error(), tc.contains)) {
			t.Errorf("%s: exit %d, %v; want %d saying %q", name, code, err, tc.code, tc.contains)
		}
	}
}
