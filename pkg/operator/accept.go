package operator

import (
	configv1 "github.com/openshift/api/config/v1"
)

// forces says whether cv's spec asks for target with force: by version, or
// by image, whose release is target.
func forces(cv *configv1.ClusterVersion, target string) bool {
	du := cv.Spec.DesiredUpdate
	if du == nil || !du.Force {
		return false
	}
	if du.Version == "" && du.Image != "" {
		return true
	}
	return targetVersion(cv) == target
}
