package precondition

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
)

func TestCRDCompatibility(t *testing.T) {
	invalid := crdcompat.Finding{CRD: "widgets.example.com", Rule: crdcompat.ExistingObjectsInvalid, Version: "v1",
		Message: "CustomResourceDefinition widgets.example.com: the new schema of v1 rejects 1 existing object(s): ns/a: spec.color: Required value"}
	stored := crdcompat.Finding{CRD: "gadgets.example.com", Rule: crdcompat.StoredVersionRemoved, Version: "v1alpha1",
		Message: "CustomResourceDefinition gadgets.example.com removes version v1alpha1, which status.storedVersions lists"}
	webhook := invalid
	webhook.Warning = true

	for _, tc := range []struct {
		name                  string
		findings              []crdcompat.Finding
		refused, forcedRefuse bool
		reason                string
	}{
		{name: "no findings pass"},
		{name: "invalid objects are refused and force accepts them", findings: []crdcompat.Finding{invalid}, refused: true, reason: "ExistingObjectsInvalid"},
		{name: "a removed stored version is refused even with force", findings: []crdcompat.Finding{invalid, stored}, refused: true, forcedRefuse: true, reason: "ExistingObjectsInvalid"},
		{name: "a webhook's invalid objects are a recorded risk", findings: []crdcompat.Finding{webhook}, reason: "ExistingObjectsInvalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := ReleaseContext{DesiredVersion: "1.1.0", CRDFindings: tc.findings}
			err := CRDCompatibility{}.Run(context.Background(), rc)
			if len(tc.findings) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var pErr *Error
			if err == nil || !errors.As(err, &pErr) || pErr.Reason != tc.reason {
				t.Fatalf("got %v, want an *Error with reason %s", err, tc.reason)
			}
			for _, f := range tc.findings {
				if !strings.Contains(err.Error(), f.CRD) || !strings.Contains(err.Error(), string(f.Rule)) {
					t.Errorf("message %q does not name %s and %s", err, f.CRD, f.Rule)
				}
			}
			if blocking, _ := Summarize([]error{err}, false); blocking != tc.refused {
				t.Errorf("blocking %v, want %v", blocking, tc.refused)
			}
			blocking, summary := Summarize([]error{err}, true)
			if blocking != tc.forcedRefuse {
				t.Errorf("with force: blocking %v, want %v", blocking, tc.forcedRefuse)
			}
			if tc.forcedRefuse && !strings.Contains(summary.Error(), "Force does not override") {
				t.Errorf("a refusal force cannot lift must say so: %v", summary)
			}
		})
	}
}
