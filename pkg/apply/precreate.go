package apply

import (
	"context"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// precreate creates the node's ClusterOperators before its other tasks
// run, with the status.relatedObjects of their manifests, as the CVO's
// PrecreatingMode does: an operator's ClusterOperator, and what must-gather
// follows from it, exist before the operator starts. A failure is only
// logged; the ClusterOperator's own task applies it later in any case.
// Only the ClusterOperators this engine has not yet seen are tried, and
// not while reconciling, so a resync sends nothing.
func (p *pass) precreate(ctx context.Context, n *graph.Node) {
	if p.opts.Mode == graph.ModeReconcile {
		return
	}
	for _, t := range n.Tasks {
		m := p.taskManifest(t)
		if m.Delete() || m.Obj.GroupVersionKind().GroupKind() != payload.ClusterOperatorKind || p.current[m.ID()] || p.e.wrote(m) {
			continue
		}
		if err := p.precreateOne(ctx, m); err != nil {
			klog.FromContext(ctx).V(2).Info("Unable to precreate", "object", m.ID(), "file", m.Position(), "err", err)
		}
	}
}

func (p *pass) precreateOne(ctx context.Context, m *payload.Manifest) error {
	rc, err := p.resourceFor(m)
	if err != nil {
		return err
	}
	created, err := p.e.create(ctx, m, rc, p.e.withoutUndeclared(m, desiredObject(m)))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	related, err := relatedObjects(m)
	if err != nil {
		return err
	}
	if len(related) > 0 {
		withStatus := created.DeepCopy()
		if err := unstructured.SetNestedSlice(withStatus.Object, related, "status", "relatedObjects"); err != nil {
			return err
		}
		updated, err := rc.ri.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			// Its operator wrote first: its status stands.
			return nil
		}
		if err != nil {
			return err
		}
		created = updated
	}
	p.e.remember(m, rc, created, false)
	return nil
}

// relatedObjects are the manifest's status.relatedObjects as the typed
// ClusterOperator writes them: a reference without a name (a whole
// resource) gets the empty name the schema requires, as the CVO's typed
// client sends it.
func relatedObjects(m *payload.Manifest) ([]interface{}, error) {
	var co configv1.ClusterOperator
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Obj.Object, &co); err != nil {
		return nil, err
	}
	out := make([]interface{}, 0, len(co.Status.RelatedObjects))
	for i := range co.Status.RelatedObjects {
		ref, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&co.Status.RelatedObjects[i])
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}
