package apply

import (
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Reason classifies a task failure. The values match the CVO's so that tools
// that read ClusterVersion conditions keep working.
type Reason string

const (
	ReasonFailed              Reason = "UpdatePayloadFailed"
	ReasonNotFound            Reason = "UpdatePayloadResourceNotFound"
	ReasonConflict            Reason = "UpdatePayloadResourceConflict"
	ReasonInvalid             Reason = "UpdatePayloadResourceInvalid"
	ReasonForbidden           Reason = "UpdatePayloadResourceForbidden"
	ReasonUnauthorized        Reason = "UpdatePayloadClusterUnauthorized"
	ReasonClusterDown         Reason = "UpdatePayloadClusterDown"
	ReasonClusterError        Reason = "UpdatePayloadClusterError"
	ReasonClusterOverloaded   Reason = "UpdatePayloadClusterOverloaded"
	ReasonTypeMissing         Reason = "UpdatePayloadResourceTypeMissing"
	ReasonDeletionRefused     Reason = "ResourceDeletionRefused"
	ReasonDeletionFailed      Reason = deletion.ReasonFailed
	ReasonCRDNotEstablished   Reason = "CustomResourceDefinitionNotEstablished"
	ReasonWorkloadNotProgress Reason = "WorkloadNotProgressing"
	ReasonWorkloadNotAvail    Reason = "WorkloadNotAvailable"
	ReasonJobFailed           Reason = "JobFailed"
	ReasonJobNotComplete      Reason = "JobNotComplete"
	ReasonCONoVersions        Reason = "ClusterOperatorNoVersions"
	ReasonCONotAvailable      Reason = "ClusterOperatorNotAvailable"
	ReasonCODegraded          Reason = "ClusterOperatorDegraded"
	ReasonCOUpdating          Reason = "ClusterOperatorUpdating"
)

// Effect says how a failure weighs on the sync, as the CVO's UpdateEffect.
type Effect string

const (
	// EffectFail fails the task.
	EffectFail Effect = "Fail"
	// EffectNone is a wait: the task did not finish, but nothing is wrong yet.
	EffectNone Effect = "None"
	// EffectFailAfterInterval fails only once the condition has lasted too long.
	EffectFailAfterInterval Effect = "FailAfterInterval"
	// EffectReport is reported without failing the task.
	EffectReport Effect = "Report"
)

// TaskError is a failed task: which manifest, why, and how much it weighs.
type TaskError struct {
	Subject payload.ObjectID
	File    string
	Reason  Reason
	Effect  Effect
	Message string
	Err     error
}

func (e *TaskError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("%s (%s): %s", e.Subject, e.File, msg)
}

func (e *TaskError) Unwrap() error { return e.Err }

// retryable reports whether another attempt could succeed.
func (e *TaskError) retryable() bool {
	switch e.Reason {
	case ReasonDeletionRefused, ReasonInvalid, ReasonCONoVersions, ReasonCRDUpdateBlocked:
		// The CRD check retries its reads itself; the next pass tries again.
		return false
	}
	return true
}

// taskError wraps err for manifest m, classifying it unless it is already a
// TaskError; one that does not name its manifest's file gets m's.
func taskError(m *payload.Manifest, action string, err error) *TaskError {
	var te *TaskError
	if errors.As(err, &te) {
		if te.File == "" {
			te.File = m.Position()
		}
		return te
	}
	return &TaskError{
		Subject: m.ID(),
		File:    m.Position(),
		Reason:  ReasonFor(err),
		Effect:  EffectFail,
		Message: fmt.Sprintf("%s failed: %v", action, err),
		Err:     err,
	}
}

// ReasonFor maps an API error to a CVO-style reason. It is the one place that
// classifies apiserver errors.
func ReasonFor(err error) Reason {
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case meta.IsNoMatchError(err):
		return ReasonTypeMissing
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return ReasonConflict
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return ReasonInvalid
	case apierrors.IsForbidden(err):
		return ReasonForbidden
	case apierrors.IsUnauthorized(err):
		return ReasonUnauthorized
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err):
		return ReasonClusterOverloaded
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), errors.As(err, &netErr):
		return ReasonClusterDown
	case apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return ReasonClusterError
	}
	return ReasonFailed
}
