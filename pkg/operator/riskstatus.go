package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
)

// The ClusterVersion fields newer openshift/api has and the pinned module
// lacks: spec.desiredUpdate.acceptRisks, which the operator reads, and the
// risk status (clusterversion.WithRiskStatus), which it writes and reads
// back. The typed client drops both, so they are read unstructured and
// the status is written as JSON.

// newerFields are those fields of one resourceVersion of the ClusterVersion.
type newerFields struct {
	resourceVersion string
	acceptRisks     []string
	applies         clusterversion.RiskApplies
}

// newerFieldsOf reads them from u.
func newerFieldsOf(u *unstructured.Unstructured) newerFields {
	return newerFields{resourceVersion: u.GetResourceVersion(), acceptRisks: acceptRisksOf(u), applies: clusterversion.RiskAppliesOf(u.Object)}
}

// fieldCache remembers the newer fields of one resourceVersion, so that a
// pass reads them once, and not at all after its own status write, whose
// answer holds them.
type fieldCache struct {
	dynamic dynamic.Interface
	mu      sync.Mutex
	last    newerFields
}

// of returns the newer fields of cv, through the dynamic client once per
// resourceVersion: none when the ClusterVersion does not exist, or without
// a cache or a client.
func (c *fieldCache) of(ctx context.Context, cv *configv1.ClusterVersion) (newerFields, error) {
	if c == nil || c.dynamic == nil {
		return newerFields{}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cv.ResourceVersion != "" && c.last.resourceVersion == cv.ResourceVersion {
		return c.last, nil
	}
	u, err := c.dynamic.Resource(clusterVersionsResource).Get(ctx, cv.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return newerFields{}, nil
	}
	if err != nil {
		return newerFields{}, err
	}
	f := newerFieldsOf(u)
	// Kept under the version asked for: the pass decides on that one.
	f.resourceVersion = cv.ResourceVersion
	c.last = f
	return f, nil
}

// remember keeps f, read from a write's answer.
func (c *fieldCache) remember(f newerFields) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = f
}

// statusPut replaces the status of the ClusterVersion name with that of
// body, a ClusterVersion as JSON, and returns the object stored, as JSON.
type statusPut func(ctx context.Context, name string, body []byte) ([]byte, error)

// restStatusPut puts through cc's REST client. Fields the CRD lacks are
// pruned by the apiserver without a warning. A client without one (the
// fake clientset) takes the typed status alone.
func restStatusPut(cc configclient.Interface) statusPut {
	rc, ok := cc.ConfigV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return typedStatusPut(cc)
	}
	return func(ctx context.Context, name string, body []byte) ([]byte, error) {
		return rc.Put().Resource("clusterversions").Name(name).SubResource("status").
			Param("fieldValidation", "Ignore").Body(body).Do(ctx).Raw()
	}
}

// typedStatusPut puts the typed status of body through cc.
func typedStatusPut(cc configclient.Interface) statusPut {
	return func(ctx context.Context, name string, body []byte) ([]byte, error) {
		cv := &configv1.ClusterVersion{}
		if err := json.Unmarshal(body, cv); err != nil {
			return nil, err
		}
		got, err := cc.ConfigV1().ClusterVersions().UpdateStatus(ctx, cv, metav1.UpdateOptions{FieldValidation: "Ignore"})
		if err != nil {
			return nil, err
		}
		return json.Marshal(got)
	}
}

// statusBody is cv as JSON, with the risk status applies lays over its
// status.
func statusBody(cv *configv1.ClusterVersion, applies clusterversion.RiskApplies) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cv)
	if err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = configv1.GroupVersion.String(), "ClusterVersion"
	if err := clusterversion.WithRiskStatus(obj, &cv.Status, applies); err != nil {
		return nil, fmt.Errorf("the risk status: %w", err)
	}
	return json.Marshal(obj)
}

// decodeWritten reads a status write's answer: the typed object and the
// newer fields.
func decodeWritten(raw []byte) (*configv1.ClusterVersion, newerFields, error) {
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, newerFields{}, err
	}
	cv := &configv1.ClusterVersion{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cv); err != nil {
		return nil, newerFields{}, err
	}
	return cv, newerFieldsOf(&u), nil
}

// sameApplies: two risk statuses are equal, an empty one whether nil or not.
func sameApplies(a, b clusterversion.RiskApplies) bool {
	return len(a) == 0 && len(b) == 0 || equality.Semantic.DeepEqual(a, b)
}

// keptApplies is applies for the risks of updates alone: the budget may
// have dropped updates.
func keptApplies(applies clusterversion.RiskApplies, updates []configv1.ConditionalUpdate) clusterversion.RiskApplies {
	out := clusterversion.RiskApplies{}
	for _, u := range updates {
		for _, r := range u.Risks {
			if c, ok := applies[r.Name]; ok {
				out[r.Name] = c
			}
		}
	}
	return out
}
