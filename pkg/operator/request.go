package operator

import (
	"context"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// RequestRelease points spec.desiredUpdate at version, as `oc adm upgrade
// --to` does. It writes only when the request changes.
func (o *Operator) RequestRelease(ctx context.Context, version string, force bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cvs := o.config.ConfigV1().ClusterVersions()
		cv, err := cvs.Get(ctx, o.cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if du := cv.Spec.DesiredUpdate; du != nil && du.Version == version && du.Force == force && du.Image == "" {
			return nil
		}
		cv.Spec.DesiredUpdate = &configv1.Update{Version: version, Force: force}
		_, err = cvs.Update(ctx, cv, metav1.UpdateOptions{FieldValidation: "Ignore"})
		return err
	})
}
