package operator

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncWithOnlyAnInvalidRequest: with no release yet, an empty
// desiredUpdate is Invalid and, being no request, leaves Failing at
// NoDesiredUpdate; nothing is applied.
func TestSyncWithOnlyAnInvalidRequest(t *testing.T) {
	c := newFakeCluster(t, &DirStore{Root: t.TempDir()}, "")
	out, err := c.op.Sync(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result != nil || len(out.Invalid) != 1 {
		t.Fatalf("outcome %+v", out)
	}
	cv, err := c.config.ConfigV1().ClusterVersions().Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, cv, clusterversion.ConditionInvalid, configv1.ConditionTrue, clusterversion.ReasonInvalidClusterVersion, "spec.desiredUpdate: Required value")
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonNoDesiredUpdate, "No release is requested")
	// That the spec stays as the admin wrote it needs the status
	// subresource, which the fake lacks: TestInvalidClusterVersion (e2e).
}
