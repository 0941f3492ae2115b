package clusterversion

import configv1 "github.com/openshift/api/config/v1"

// Condition types the ClusterVersion carries beyond the operator ones.
const (
	ConditionFailing         configv1.ClusterStatusConditionType = "Failing"
	ConditionReleaseAccepted configv1.ClusterStatusConditionType = "ReleaseAccepted"
	ConditionRetrieved       configv1.ClusterStatusConditionType = "RetrievedUpdates"
	// ConditionInvalid is True while the spec fails validation.
	ConditionInvalid configv1.ClusterStatusConditionType = "Invalid"
)

// Reasons the operator sets.
const (
	ReasonPayloadLoaded      = "PayloadLoaded"
	ReasonLoadPayload        = "LoadPayload"
	ReasonPreconditionChecks = "PreconditionChecks"
	ReasonMultipleErrors     = "MultipleErrors"
	ReasonNoDesiredUpdate    = "NoDesiredUpdate"
	// ReasonInvalidClusterVersion is Invalid's reason, and Progressing's
	// while the spec is invalid.
	ReasonInvalidClusterVersion = "InvalidClusterVersion"
)

// Reasons of a record store whose ConfigMap holds data that cannot be
// decoded: the delete ledger's, or the operand cleanup state's.
const (
	ReasonDeleteLedgerUnreadable        = "DeleteLedgerUnreadable"
	ReasonOperandCleanupStateUnreadable = "OperandCleanupStateUnreadable"
)

// Reasons of the Upgradeable condition. A failed delete gives
// deletion.ReasonFailed and overrides give
// precondition.ReasonClusterVersionOverridesSet, which the update checks
// share.
const (
	ReasonDeletionInProgress  = "ResourceDeletionInProgress"
	ReasonOperatorsNotUpgrade = "ClusterOperatorsNotUpgradeable"
	// ReasonUpdating: an install or update is under way (Progressing is
	// True), as the CVO names it since 2026.
	ReasonUpdating             = "ClusterVersionUpdating"
	ReasonMultipleReasons      = "MultipleReasons"
	ReasonAsExpected           = "AsExpected"
	maxNamedObjectsInCondition = 10
)

// The CVO's condition on capabilities the spec does not ask for but that
// stay enabled.
const (
	ConditionImplicitlyEnabledCapabilities configv1.ClusterStatusConditionType = "ImplicitlyEnabledCapabilities"
	ReasonCapabilitiesImplicitlyEnabled                                        = "CapabilitiesImplicitlyEnabled"
	// ReasonCurrentReleaseUnreadable refuses an update, with
	// Config.RequireCurrentRelease, whose current release cannot be read.
	ReasonCurrentReleaseUnreadable = "CurrentReleaseUnreadable"
)

// ConditionStatusTruncated is True while the status as last written
// leaves something out to stay within its limits; the message says what.
// It is absent otherwise.
const ConditionStatusTruncated configv1.ClusterStatusConditionType = "StatusTruncated"

// ReasonStatusLimits is the reason of StatusTruncated, and of the Warning
// Event that announces a new cut.
const ReasonStatusLimits = "StatusLimits"

// ConditionReleaseDeprecated is True while the cluster runs a release the
// update graph marks deprecated.
const ConditionReleaseDeprecated configv1.ClusterStatusConditionType = "ReleaseDeprecated"

// ReasonRetrieving is RetrievedUpdates=Unknown's while the graph has not
// answered for the cluster's version, channel and upstream.
const ReasonRetrieving = "Retrieving"

// ConditionOperandCleanup reports the operand cleanups of removed
// components. It is True while one runs or waits; it never sets Failing.
// Its reasons are cleanup's (cleanup.Reason*).
const ConditionOperandCleanup configv1.ClusterStatusConditionType = "OperandCleanup"

// ReasonRetrievePayload, ReasonVerifyPayloadVersion and
// ReasonImageVerificationFailed are the CVO's ReleaseAccepted reasons for
// the steps of reading a release by image.
const (
	ReasonRetrievePayload         = "RetrievePayload"
	ReasonVerifyPayloadVersion    = "VerifyPayloadVersion"
	ReasonImageVerificationFailed = "ImageVerificationFailed"
)
