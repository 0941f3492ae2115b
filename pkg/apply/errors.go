package apply

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

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
	// The CVO's reasons for several operators failing alike.
	ReasonCOsNoVersions   Reason = "ClusterOperatorsNoVersions"
	ReasonCOsNotAvailable Reason = "ClusterOperatorsNotAvailable"
	ReasonCOsDegraded     Reason = "ClusterOperatorsDegraded"
	ReasonCOsUpdating     Reason = "ClusterOperatorsUpdating"
)

// TaskError is a failed task: which manifest, why, and how much it weighs.
type TaskError struct {
	Subject payload.ObjectID
	File    string
	Reason  Reason
	Effect  payload.Effect
	Message string
	Err     error
	// Detail, Operator, PluralReason and PluralMessage are a health
	// check's (Health).
	Detail        string
	Operator      string
	PluralReason  Reason
	PluralMessage string
	// Since is when this pass's release first found the operator short of
	// healthy; zero for other tasks.
	Since time.Time
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
	if e.Effect == payload.EffectReport {
		// Reported, it holds nothing back; the next pass looks again.
		return false
	}
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
		Effect:  payload.EffectFail,
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

// Summary is the CVO's short account of a failure's reason for the
// Progressing message ("Unable to apply 4.x: <summary>"); name is the
// object or operator, when one is known.
func Summary(reason Reason, name string) string {
	named := func(one, anon string) string {
		if name != "" {
			return fmt.Sprintf(one, name)
		}
		return anon
	}
	switch reason {
	case ReasonNotFound, ReasonConflict:
		return "some resources could not be updated"
	case ReasonClusterDown:
		return "the control plane is down or not responding"
	case ReasonClusterError:
		return "the control plane is reporting an internal error"
	case ReasonClusterOverloaded:
		return "the control plane is overloaded and is not accepting updates"
	case ReasonUnauthorized:
		return "could not authenticate to the server"
	case ReasonForbidden:
		return "the server is rejecting updates"
	case ReasonTypeMissing:
		return "a required extension is not available to update"
	case ReasonInvalid:
		return "some cluster configuration is invalid"
	case ReasonCODegraded:
		return named("the cluster operator %s is degraded", "a cluster operator is degraded")
	case ReasonCONotAvailable:
		return named("the cluster operator %s is not available", "a cluster operator is not available")
	case ReasonCONoVersions:
		return named("the cluster operator %s does not declare expected versions", "a cluster operator does not declare expected versions")
	case ReasonWorkloadNotAvail:
		return named("the workload %s has not yet successfully rolled out", "a workload has not yet rolled out")
	case ReasonWorkloadNotProgress:
		return named("the workload %s cannot roll out", "a workload cannot roll out")
	case ReasonCOsNotAvailable:
		return "some cluster operators are not available"
	// The CVO has no summary of these, and would print "<names> has an
	// unknown error: <reason>".
	case ReasonCOsDegraded:
		return "some cluster operators are degraded"
	case ReasonCOsNoVersions:
		return "some cluster operators do not declare expected versions"
	case ReasonCOsUpdating:
		return "some cluster operators are updating versions"
	}
	if strings.HasPrefix(string(reason), "UpdatePayload") {
		return "the update could not be applied"
	}
	return named("%s has an unknown error: "+string(reason), "an unknown error has occurred: "+string(reason))
}
