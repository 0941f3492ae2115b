package payload

// RuleInfo describes a rule for documentation and `lint --list-rules`.
type RuleInfo struct {
	ID Rule `json:"id"`
	// Severity is the rule's usual severity; Summary says when it differs.
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
}

// AllRules lists every rule in the order docs/annotations.md gives them.
var AllRules = []RuleInfo{
	{RuleParseError, SeverityError, "a document does not parse, sets a key twice, lacks apiVersion, kind or metadata.name, or sets one of them or metadata.namespace to anything but a string"},
	{RuleYAMLMergeKey, SeverityError, "a YAML merge key (<<) copies keys into a mapping, where they may add or override an annotation unseen"},
	{RuleDuplicateInFile, SeverityError, "one file defines an object twice"},
	{RuleInvalidName, SeverityError, "metadata.name or metadata.namespace is no valid Kubernetes name (a path segment, no control characters, at most 253 characters)"},
	{RuleReleaseMetadata, SeverityError, "release-metadata or image-references is invalid (bad metadata.url or channels values are warnings)"},
	{RuleDeleteValue, SeverityError, `release.openshift.io/delete is anything but the string "true"`},
	{RuleProtectedDelete, SeverityError, "a delete manifest for an object the applier never deletes: kube-system, its own namespace, Deployment, ledger, ClusterVersion, ..."},
	{RuleUnknownAnnotation, SeverityError, "an unknown release.openshift.io/ key or include.release.openshift.io/ profile"},
	{RuleAnnotationValue, SeverityError, "an annotation value the filters do not understand, or a value that is not a string"},
	{RuleUnknownCapability, SeverityWarning, "capability.openshift.io/name names an unknown capability"},
	{RuleDeleteCreateOnly, SeverityWarning, "a manifest is both a delete and create-only"},
	{RuleFileName, SeverityWarning, "a file name lacks 0000_<runlevel>_<component>_"},
	{RuleCRDVersionMismatch, SeverityError, "an apiextensions.k8s.io/v1beta1 CRD's spec.version is not its first spec.versions entry"},
	{RuleCRDShadowsBuiltin, SeverityError, "a CRD, created or deleted, has the group and plural of a built-in Kubernetes resource, which the API server serves instead"},
	{RuleCRDRemovedIn, SeverityError, "a CRD's <group>/removed-in is not a release line X.Y later than the release (a warning when no version is deprecated)"},
	{RuleUnknownField, SeverityWarning, "a built-in or OpenShift kind sets a field its type does not declare"},
	{RuleDuplicateObject, SeverityWarning, "two files create the same object"},
	{RuleCreatedAndDeleted, SeverityError, "one manifest creates an object that another deletes"},
	{RuleNamespaceDeleted, SeverityError, "an object is created in a namespace that is deleted"},
	{RuleAPIStillUsed, SeverityError, "a kind is used while its CRD is deleted"},
	{RuleProviderAfterConsumer, SeverityWarning, "a custom resource is applied before its CRD (an error with --previous when the API is new)"},
	{RuleVersionNotServed, SeverityError, "a custom resource uses a version its CRD does not serve"},
	{RuleNoProvider, SeverityWarning, "no CRD in the payload and no built-in API serves a kind"},
	{RuleNamespaceOnClusterScoped, SeverityError, "metadata.namespace on a cluster-scoped kind (built-in, or a CRD of the payload)"},
	{RuleDestructiveDelete, SeverityWarning, "a Namespace or CRD is deleted, and everything in it or of its kind with it"},
	{RuleNoOperandCleanup, SeverityWarning, "a component's workload and CRD are deleted without operand-cleanup: Supported on the CRD"},
	{RuleMinorLeftover, SeverityError, "a delete manifest the previous minor already had (info within a z-stream)"},
	{RuleOrphan, SeverityWarning, "an object of the previous release that nothing creates or deletes now"},
	{RuleServedVersionDropped, SeverityError, "a CRD drops a version the previous release served"},
	{RuleStorageVersionDropped, SeverityError, "a CRD drops the previous release's storage version"},
	{RuleCRDImmutableField, SeverityError, "a CRD changes its scope, group, names.kind or names.plural"},
}
