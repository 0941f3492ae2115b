package payload

// checkOperandCleanup (no-operand-cleanup): a release that removes a
// component, its operator's workload and a CRD it owns, without
// release.openshift.io/operand-cleanup: "Supported" on the CRD's delete
// manifest. Deleting the CRD deletes its custom resources after their
// operator is gone, so finalizers nobody runs wedge the CRD, and what
// they guarded outside the cluster leaks. A warning: some operands have
// no finalizers and nothing to clean.
func checkOperandCleanup(idx *releaseIndex, _ *Release) []Finding {
	removesWorkload := map[string]bool{}
	for _, m := range idx.r.Manifests {
		id := m.ID()
		if gk := id.GroupKind(); m.Delete() && m.Component != "" && (gk == DeploymentKind || gk == DaemonSetKind) {
			removesWorkload[m.Component] = true
		}
	}
	var findings []Finding
	for _, m := range idx.r.Manifests {
		id := m.ID()
		if !m.Delete() || !removesWorkload[m.Component] || !m.IsCRD() ||
			m.Obj.GetAnnotations()[OperandCleanupAnnotation] == OperandCleanupSupported {
			continue
		}
		findings = append(findings, atKey(idx.r, m, DeleteAnnotation, RuleNoOperandCleanup, SeverityWarning,
			`component %s removes its operator and %s without %s: "Supported"; its custom resources are deleted after their operator is gone, so their finalizers may never run; mark the CRD's delete manifest so that a cluster admin can opt in to cleaning them up first`,
			m.Component, id.Name, OperandCleanupAnnotation))
	}
	return findings
}
