package operator

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RequestRelease points spec.desiredUpdate at version, as `oc adm upgrade
// --to` does. It writes only when the request changes. A merge patch, not
// an update of the typed object: that would drop
// spec.desiredUpdate.acceptRisks, which the pinned API lacks, and the
// risks admins accept may apply to the next update too.
func (o *Operator) RequestRelease(ctx context.Context, version string, force bool) error {
	cv, err := o.config.ConfigV1().ClusterVersions().Get(ctx, o.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if du := cv.Spec.DesiredUpdate; du != nil && du.Version == version && du.Force == force && du.Image == "" {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"desiredUpdate": map[string]any{
		"version": version, "force": force, "image": nil, "architecture": nil}}})
	if err != nil {
		return err
	}
	_, err = o.config.ConfigV1().ClusterVersions().Patch(ctx, o.cfg.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// RequestImage points spec.desiredUpdate at the release image, with no
// version: the release it holds says which, and resolveTarget judges it
// as it judges any image request. It writes only when the request changes.
func (o *Operator) RequestImage(ctx context.Context, image string, force bool) error {
	cv, err := o.config.ConfigV1().ClusterVersions().Get(ctx, o.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if du := cv.Spec.DesiredUpdate; du != nil && du.Image == image && du.Force == force && du.Version == "" {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"desiredUpdate": map[string]any{
		"image": image, "force": force, "version": nil, "architecture": nil}}})
	if err != nil {
		return err
	}
	_, err = o.config.ConfigV1().ClusterVersions().Patch(ctx, o.cfg.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
