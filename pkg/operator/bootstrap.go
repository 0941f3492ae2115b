package operator

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/payload-applier/payload-applier/manifests"
	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Bootstrap makes sure the cluster has what the operator needs: the
// ClusterVersion and ClusterOperator CRDs, its namespace and the
// ClusterVersion itself. When all exist it only reads.
func (o *Operator) Bootstrap(ctx context.Context) error {
	crds, err := manifests.CRDs()
	if err != nil {
		return err
	}
	var cvHeld bool
	for _, crd := range crds {
		live, err := ensureCRD(ctx, o.dynamic, crd)
		if err != nil {
			return err
		}
		if crd.GetName() == clusterVersionsResource.GroupResource().String() {
			cvHeld = apply.CreateHeld(live, o.clock.Now())
		}
	}
	if _, err := o.kube.CoreV1().Namespaces().Get(ctx, o.cfg.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.cfg.Namespace}}
		if _, err := o.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", o.cfg.Namespace, err)
		}
	} else if err != nil {
		return fmt.Errorf("get namespace %s: %w", o.cfg.Namespace, err)
	}
	cvs := o.config.ConfigV1().ClusterVersions()
	if _, err := cvs.Get(ctx, o.cfg.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		cv := &configv1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: o.cfg.Name},
			Spec:       configv1.ClusterVersionSpec{ClusterID: configv1.ClusterID(uuid.NewString())},
		}
		if err := o.createClusterVersion(ctx, cv, cvHeld); err != nil {
			return fmt.Errorf("create ClusterVersion %s: %w", o.cfg.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("get ClusterVersion %s: %w", o.cfg.Name, err)
	}
	return nil
}

// createClusterVersion creates cv, by server-side apply while the
// apiserver would hold its POST (apply.CreateHeld): on a first install
// that is 2 s with nothing else to do.
func (o *Operator) createClusterVersion(ctx context.Context, cv *configv1.ClusterVersion, held bool) error {
	if !held {
		_, err := o.config.ConfigV1().ClusterVersions().Create(ctx, cv, metav1.CreateOptions{FieldValidation: "Ignore"})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": configv1.GroupVersion.String(), "kind": "ClusterVersion",
		"metadata": map[string]interface{}{"name": cv.Name},
		"spec":     map[string]interface{}{"clusterID": string(cv.Spec.ClusterID)},
	}}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	// Without force: a ClusterVersion made meanwhile keeps its cluster ID.
	_, err = o.dynamic.Resource(clusterVersionsResource).Patch(ctx, cv.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: apply.FieldManager})
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// ensureCRD creates a missing CRD and waits until it is Established, and
// returns it. An existing CRD is left alone: a newer one may be installed
// by the payload.
func ensureCRD(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri := dyn.Resource(payload.CRDGVR)
	live, err := ri.Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err == nil {
		return live, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get CRD %s: %w", crd.GetName(), err)
	}
	created, err := ri.Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
	}
	rv := "" // made meanwhile by another: from its current state
	if created != nil {
		rv = created.GetResourceVersion()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return apply.WaitEstablished(ctx, ri, crd.GetName(), rv)
}

// hostIdentity names this process for leader election: node, else the host
// name, plus a random suffix, so that two processes on one host never share
// a lease.
func hostIdentity(node string) string {
	h := node
	if h == "" {
		h, _ = os.Hostname()
	}
	if h == "" {
		h = "payload-applier"
	}
	return h + "_" + uuid.NewString()
}

func eventScheme() *runtime.Scheme { return scheme.Scheme }
