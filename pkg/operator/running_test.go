package operator

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// TestANewClusterInstallsTheReleaseTheOperatorShipsIn: with neither
// spec.desiredUpdate nor status.desired, RunningRelease is installed, by
// the image it ships in; without it the cluster reads NoDesiredUpdate.
// Once installed, a request for another release is what moves it.
func TestANewClusterInstallsTheReleaseTheOperatorShipsIn(t *testing.T) {
	root := t.TempDir()
	dir := payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	image := "example.com/release@sha256:" + strings.Repeat("a", 64)
	for _, running := range []string{"", "1.0.0"} {
		t.Run("RunningRelease="+running, func(t *testing.T) {
			c := newFakeCluster(t, LoadedRelease{Release: rel, Image: image}, "")
			cv := c.clusterVersion(t)
			cv.Spec.DesiredUpdate = nil
			if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			c.op.cfg.RunningRelease = running
			out := c.sync(t)
			cv = c.clusterVersion(t)
			if running == "" {
				wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonNoDesiredUpdate)
				return
			}
			if out.Result == nil || !out.Result.Complete() {
				t.Fatalf("outcome %+v", out)
			}
			if d := cv.Status.Desired; d.Version != "1.0.0" || d.Image != image {
				t.Errorf("desired %s %s, want 1.0.0 by its image", d.Version, d.Image)
			}
			if len(cv.Status.History) != 1 || cv.Status.History[0].State != configv1.CompletedUpdate || cv.Status.History[0].Image != image {
				t.Errorf("history %+v, want 1.0.0 completed", cv.Status.History)
			}
			if !c.exists("keep") {
				t.Error("the release was not applied")
			}
		})
	}
}

// TestIdentityStartsWithTheNodeName, as the CVO's leader election
// identities do; without a node, with the host name; each unique.
func TestIdentityStartsWithTheNodeName(t *testing.T) {
	a, b := hostIdentity("master-0"), hostIdentity("master-0")
	if !strings.HasPrefix(a, "master-0_") || a == b {
		t.Errorf("identities %q and %q: want master-0_ and a unique suffix", a, b)
	}
	if host := hostIdentity(""); strings.HasPrefix(host, "_") || host == a {
		t.Errorf("identity without a node %q", host)
	}
}
