package story

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Names from examples/payloads that the story acts on.
const (
	clusterVersionName = "version"
	gadgetOperator     = "gadget"
	gadgetNamespace    = "gadget"
	gadgetName         = "default"
	gadgetFinalizer    = "example.com/cleanup"
)

// GadgetResource is the custom resource kind of examples/payloads' gadget component.
var GadgetResource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}

// clients are what the story needs to act and look: typed ClusterVersion
// and ClusterOperator access, and dynamic access to the Gadget.
type clients struct {
	config  configclient.Interface
	dynamic dynamic.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	cc, err := configclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{config: cc, dynamic: dyn}, nil
}

// clusterVersion returns the ClusterVersion, or nil when it does not exist.
func (c *clients) clusterVersion(ctx context.Context) (*configv1.ClusterVersion, error) {
	cv, err := c.config.ConfigV1().ClusterVersions().Get(ctx, clusterVersionName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cv, err
}

// requestRelease sets spec.desiredUpdate to version's image by digest, as
// `oc adm upgrade --to-image` does. It patches rather than updates: the
// typed ClusterVersion carries fields the installed CRD lacks, and an
// update would draw warnings.
func (c *clients) requestRelease(ctx context.Context, version, image string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"desiredUpdate": map[string]any{"version": version, "image": image, "force": false},
	}})
	if err != nil {
		return err
	}
	_, err = c.config.ConfigV1().ClusterVersions().Patch(ctx, clusterVersionName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("request release %s (%s) on ClusterVersion %s: %w", version, image, clusterVersionName, err)
	}
	return nil
}

// configMapExists reports whether the ConfigMap namespace/name exists.
func (c *clients) configMapExists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := c.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// reportOperatorAvailable plays an operator: it reports its ClusterOperator
// Available, not Degraded and not Progressing at version.
func (c *clients) reportOperatorAvailable(ctx context.Context, name, version string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cos := c.config.ConfigV1().ClusterOperators()
		co, err := cos.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
		co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: now,
				Message: "Played by the payload-applier demo"},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: now},
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: now},
		}
		_, err = cos.UpdateStatus(ctx, co, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("report ClusterOperator %s available: %w", name, err)
	}
	return nil
}

// clusterOperatorExists reports whether the named ClusterOperator exists.
func (c *clients) clusterOperatorExists(ctx context.Context, name string) (bool, error) {
	_, err := c.config.ConfigV1().ClusterOperators().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// gadget returns the demo's Gadget, or nil when it does not exist.
func (c *clients) gadget(ctx context.Context) (*unstructured.Unstructured, error) {
	g, err := c.dynamic.Resource(GadgetResource).Namespace(gadgetNamespace).Get(ctx, gadgetName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return g, err
}

// removeGadgetFinalizer plays the gadget controller finishing its cleanup.
// Only its own finalizer is removed.
func (c *clients) removeGadgetFinalizer(ctx context.Context) error {
	ri := c.dynamic.Resource(GadgetResource).Namespace(gadgetNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := ri.Get(ctx, gadgetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(g.GetFinalizers(), func(f string) bool { return f == gadgetFinalizer })
		g.SetFinalizers(kept)
		_, err = ri.Update(ctx, g, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer %s from Gadget %s/%s: %w", gadgetFinalizer, gadgetNamespace, gadgetName, err)
	}
	return nil
}

// Condition returns the ClusterVersion condition of type t, or nil.
func Condition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	if cv == nil {
		return nil
	}
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

// hasCondition reports whether condition t has status and reason.
func hasCondition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string) bool {
	c := Condition(cv, t)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

// completed reports whether the newest history entry is version, Completed.
func completed(cv *configv1.ClusterVersion, version string) bool {
	if cv == nil || len(cv.Status.History) == 0 {
		return false
	}
	h := cv.Status.History[0]
	return h.Version == version && h.State == configv1.CompletedUpdate
}

// describe summarizes a ClusterVersion for timeout messages.
func describe(cv *configv1.ClusterVersion) string {
	if cv == nil {
		return "no ClusterVersion " + clusterVersionName
	}
	var parts []string
	if du := cv.Spec.DesiredUpdate; du != nil {
		parts = append(parts, "requested "+du.Version)
	}
	if len(cv.Status.History) > 0 {
		h := cv.Status.History[0]
		parts = append(parts, fmt.Sprintf("newest history %s %s", h.Version, h.State))
	}
	for _, t := range []configv1.ClusterStatusConditionType{clusterversion.ConditionReleaseAccepted, configv1.OperatorUpgradeable, clusterversion.ConditionFailing, configv1.OperatorProgressing} {
		if c := Condition(cv, t); c != nil {
			s := fmt.Sprintf("%s=%s", c.Type, c.Status)
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			if c.Status != configv1.ConditionTrue || t == clusterversion.ConditionFailing || t == configv1.OperatorProgressing {
				if msg := firstLine(c.Message); msg != "" {
					s += ": " + msg
				}
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// waitFor polls check until it reports done, the timeout passes, ctx ends
// or the operator exits. check returns what it saw, for the timeout message.
func (s *story) waitFor(ctx context.Context, what string, check func(ctx context.Context) (done bool, seen string, err error)) error {
	deadline := time.Now().Add(s.opts.StepTimeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var seen string
	for {
		done, saw, err := check(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			// The apiserver may hiccup; report it only if it lasts.
			seen = "error: " + err.Error()
		case err == nil:
			seen = saw
			if done {
				return nil
			}
		}
		var exited <-chan struct{}
		if s.opts.Operator != nil {
			exited = s.opts.Operator.Done()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s: %w", what, context.Cause(ctx))
		case <-exited:
			return fmt.Errorf("waiting for %s: %w", what, s.opts.Operator.exitError())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; last seen: %s", s.opts.StepTimeout, what, seen)
		}
	}
}

// waitForClusterVersion waits until cond holds for the ClusterVersion.
func (s *story) waitForClusterVersion(ctx context.Context, what string, cond func(*configv1.ClusterVersion) bool) (*configv1.ClusterVersion, error) {
	var last *configv1.ClusterVersion
	err := s.waitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
		cv, err := s.c.clusterVersion(ctx)
		if err != nil {
			return false, "", err
		}
		last = cv
		return cv != nil && cond(cv), describe(cv), nil
	})
	return last, err
}
