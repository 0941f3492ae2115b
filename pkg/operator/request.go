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
	return o.request(ctx, "", version, force)
}

// RequestImage points spec.desiredUpdate at the release image, with no
// version: the release it holds says which, and resolveTarget judges it
// as it judges any image request. It writes only when the request changes.
func (o *Operator) RequestImage(ctx context.Context, image string, force bool) error {
	return o.request(ctx, image, "", force)
}

// request points spec.desiredUpdate at image or version, clearing the
// other and the architecture.
func (o *Operator) request(ctx context.Context, image, version string, force bool) error {
	cv, err := o.config.ConfigV1().ClusterVersions().Get(ctx, o.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if du := cv.Spec.DesiredUpdate; du != nil && du.Image == image && du.Version == version && du.Force == force {
		return nil
	}
	update := map[string]any{"force": force, "image": nil, "version": nil, "architecture": nil}
	if image != "" {
		update["image"] = image
	}
	if version != "" {
		update["version"] = version
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"desiredUpdate": update}})
	if err != nil {
		return err
	}
	_, err = o.config.ConfigV1().ClusterVersions().Patch(ctx, o.cfg.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
