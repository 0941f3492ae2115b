package payload

// checkObjects looks at the manifests naming one object:
//   - created-and-deleted: one manifest creates it and another deletes it,
//     so every pass would undo the other;
//   - duplicate-object: two files create it. The CVO accepts this (it
//     parses each file on its own; library-go's ManifestsFromFiles, which
//     rejects it, is not on its path) and real payloads have done it, so
//     it is a warning: the later manifest wins on every pass.
//
// Two delete manifests for one object are fine: deleting twice is a no-op.
func checkObjects(idx *releaseIndex, _ *Release) []Finding {
	var findings []Finding
	for id, ms := range idx.byID {
		if len(ms) < 2 {
			continue
		}
		var creates, deletes []*Manifest
		for _, m := range ms {
			if m.Delete() {
				deletes = append(deletes, m)
			} else {
				creates = append(creates, m)
			}
		}
		if len(creates) > 0 {
			for _, d := range deletes {
				findings = append(findings, atKey(idx.r, d, DeleteAnnotation, RuleCreatedAndDeleted, SeverityError,
					"%s is deleted here but created by %s; a release either creates or deletes an object, so drop one of the two manifests",
					id, position(idx.r, creates[0])))
			}
		}
		for _, c := range creates[min(1, len(creates)):] {
			findings = append(findings, at(idx.r, c, RuleDuplicateObject, SeverityWarning,
				"%s is also created by %s; the CVO applies both manifests in turn and the later one wins, so keep one definition",
				id, position(idx.r, creates[0])))
		}
	}
	return findings
}

// checkNamespaceDeletes: deleting a namespace deletes everything in it, so
// no manifest that is kept may create an object inside it.
func checkNamespaceDeletes(idx *releaseIndex, _ *Release) []Finding {
	var findings []Finding
	for _, m := range idx.r.Manifests {
		if m.Delete() {
			continue
		}
		ns := m.Obj.GetNamespace()
		d, deleted := idx.deletedNamespaces[ns]
		if ns == "" || !deleted {
			continue
		}
		findings = append(findings, at(idx.r, m, RuleNamespaceDeleted, SeverityError,
			"%s is created in namespace %s, which %s deletes; deleting the namespace deletes this object too, so stop creating it or keep the namespace",
			m.ID(), ns, position(idx.r, d)))
	}
	return findings
}

// checkCRDDeletes (api-still-used): deleting a CRD deletes every object of
// its kind, so no manifest that is kept may use that kind.
func checkCRDDeletes(idx *releaseIndex, _ *Release) []Finding {
	if len(idx.deletedCRDs) == 0 {
		return nil
	}
	var findings []Finding
	for _, m := range idx.r.Manifests {
		if m.Delete() {
			continue
		}
		crd, deleted := idx.deletedCRDServing(m.GVK.GroupKind())
		if !deleted {
			continue
		}
		findings = append(findings, at(idx.r, m, RuleAPIStillUsed, SeverityError,
			"%s uses %s, whose CustomResourceDefinition %s is deleted by %s; deleting a CRD deletes every object of its kind, so stop using the kind or keep the CRD",
			m.ID(), m.GVK.GroupKind(), crd.Name, position(idx.r, crd.Manifest)))
	}
	return findings
}

// checkDestructiveDeletes (destructive-delete): deleting a Namespace
// deletes everything in it, and deleting a CRD every custom resource of
// its kind, whoever created them. A warning, so that release CI shows it;
// against a cluster, plan counts what would go with it.
func checkDestructiveDeletes(idx *releaseIndex, _ *Release) []Finding {
	var findings []Finding
	for _, m := range idx.r.Manifests {
		id := m.ID()
		if !m.Delete() {
			continue
		}
		if _, protected := ProtectedReason(defaultProtected, id); protected {
			continue // protected-delete already rejects it
		}
		switch id.GroupKind() {
		case NamespaceKind:
			findings = append(findings, atKey(idx.r, m, DeleteAnnotation, RuleDestructiveDelete, SeverityWarning,
				"deleting Namespace %s deletes every object in it, including ones no payload created; run plan against a cluster to see how many", id.Name))
		case CRDKind:
			findings = append(findings, atKey(idx.r, m, DeleteAnnotation, RuleDestructiveDelete, SeverityWarning,
				"deleting CustomResourceDefinition %s deletes every custom resource of its kind, including ones no payload created; run plan against a cluster to see how many", id.Name))
		}
	}
	return findings
}
