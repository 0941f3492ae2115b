package clusterversion

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// maxInvalidMessageBytes bounds the Invalid condition's message: it
// quotes values an admin wrote.
const maxInvalidMessageBytes = 4096

// maxInvalidCapabilities bounds the unknown additional capabilities
// validation names one by one.
const maxInvalidCapabilities = 10

// Validate checks the spec as the CVO's ValidateClusterVersion
// (lib/validation) does, and the capability names and sets, which the CVO
// leaves to the CRD's enums: a cluster whose CRD lacks them, or a newer
// CRD naming capabilities this release does not know, lets them through.
//
// Unlike the CVO it accepts a desiredUpdate.version without an image that
// is neither in availableUpdates nor in history: this operator finds
// releases by version in its release store.
func Validate(cv *configv1.ClusterVersion) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if u := cv.Spec.Upstream; u != "" {
		if _, err := url.Parse(string(u)); err != nil {
			errs = append(errs, field.Invalid(spec.Child("upstream"), string(u), "must be a valid URL or empty"))
		}
	}
	if id := cv.Spec.ClusterID; id != "" {
		parsed, err := uuid.Parse(string(id))
		switch {
		case err != nil || parsed.Variant() != uuid.RFC4122:
			errs = append(errs, field.Invalid(spec.Child("clusterID"), string(id), "must be an RFC4122-variant UUID"))
		case parsed.Version() != 4:
			errs = append(errs, field.Invalid(spec.Child("clusterID"), string(id), "must be a version-4 UUID"))
		}
	}
	if du := cv.Spec.DesiredUpdate; du != nil {
		switch {
		case du.Architecture == "" && du.Version == "" && du.Image == "":
			errs = append(errs, field.Required(spec.Child("desiredUpdate"), "must specify architecture, version, or image"))
		case du.Version != "":
			if _, err := utilversion.ParseSemantic(du.Version); err != nil {
				errs = append(errs, field.Invalid(spec.Child("desiredUpdate", "version"), du.Version, "must be a semantic version (1.2.3[-...])"))
			}
		}
	}
	if caps := cv.Spec.Capabilities; caps != nil {
		path := spec.Child("capabilities")
		if set := caps.BaselineCapabilitySet; set != "" {
			if _, ok := configv1.ClusterVersionCapabilitySets[set]; !ok {
				errs = append(errs, field.NotSupported(path.Child("baselineCapabilitySet"), string(set), payload.KnownCapabilitySets()))
			}
		}
		known := map[configv1.ClusterVersionCapability]bool{}
		for _, c := range configv1.KnownClusterVersionCapabilities {
			known[c] = true
		}
		unknown := 0
		for i, c := range caps.AdditionalEnabledCapabilities {
			if known[c] {
				continue
			}
			// A spec may list any number: the first are named, the rest counted.
			if unknown++; unknown <= maxInvalidCapabilities {
				errs = append(errs, field.Invalid(path.Child("additionalEnabledCapabilities").Index(i), string(c), "is not a capability this release knows"))
			}
		}
		if more := unknown - maxInvalidCapabilities; more > 0 {
			errs = append(errs, field.Invalid(path.Child("additionalEnabledCapabilities"), fmt.Sprintf("%d more", more), "are not capabilities this release knows"))
		}
	}
	return errs
}

// clearInvalidFields drops from cv's spec what failed validation and has a
// meaning the operator would act on, as the CVO's ClearInvalidFields does:
// an invalid desiredUpdate is no request, so the current release is
// reconciled. Invalid capabilities are kept: the resolve ignores unknown
// names, and dropping an unknown baseline set would fall back to vCurrent
// and enable, for good, capabilities the admin left out.
func clearInvalidFields(cv *configv1.ClusterVersion, errs field.ErrorList) {
	for _, err := range errs {
		switch {
		case err.Field == "spec.desiredUpdate" || strings.HasPrefix(err.Field, "spec.desiredUpdate."):
			cv.Spec.DesiredUpdate = nil
		case err.Field == "spec.upstream":
			cv.Spec.Upstream = ""
		case err.Field == "spec.clusterID":
			cv.Spec.ClusterID = ""
		}
	}
}

// invalidCondition is the CVO's Invalid condition for errs; nil when there
// are none, and the condition is then removed.
func invalidCondition(errs field.ErrorList) *configv1.ClusterOperatorStatusCondition {
	if len(errs) == 0 {
		return nil
	}
	var b strings.Builder
	if len(errs) == 1 {
		fmt.Fprintf(&b, "The cluster version is invalid: %s", errs[0].Error())
	} else {
		b.WriteString("The cluster version is invalid:\n")
		for _, err := range errs {
			if b.Len() > maxInvalidMessageBytes {
				break
			}
			fmt.Fprintf(&b, "* %s\n", err.Error())
		}
	}
	return &configv1.ClusterOperatorStatusCondition{Type: ConditionInvalid, Status: configv1.ConditionTrue,
		Reason: ReasonInvalidClusterVersion, Message: textwrap.Bound(b.String(), maxInvalidMessageBytes)}
}

// CheckSpec validates cv's spec, sets or removes Invalid, and clears the
// invalid fields from cv so that this pass does not act on them. Only the
// status is written back, so the admin's spec stays as written.
func CheckSpec(cv *configv1.ClusterVersion, now metav1.Time) field.ErrorList {
	errs := Validate(cv)
	if c := invalidCondition(errs); c != nil {
		cv.Status.Conditions = SetCondition(cv.Status.Conditions, *c, now)
	} else {
		cv.Status.Conditions = RemoveCondition(cv.Status.Conditions, ConditionInvalid)
	}
	clearInvalidFields(cv, errs)
	return errs
}

// ProgressingWhileInvalid says in Progressing, as the CVO does, that the
// operator stopped acting on the spec; a pass that failed keeps its reason.
func ProgressingWhileInvalid(status *configv1.ClusterVersionStatus, now metav1.Time) {
	p := FindCondition(status.Conditions, configv1.OperatorProgressing)
	if f := FindCondition(status.Conditions, ConditionFailing); p == nil || f != nil && f.Status == configv1.ConditionTrue {
		return
	}
	c := *p
	c.Reason = ReasonInvalidClusterVersion
	if c.Status == configv1.ConditionFalse {
		c.Message = fmt.Sprintf("Stopped at %s: the cluster version is invalid", status.Desired.Version)
	} else {
		c.Message = fmt.Sprintf("Reconciling %s: the cluster version is invalid", status.Desired.Version)
	}
	status.Conditions = SetCondition(status.Conditions, c, now)
}
