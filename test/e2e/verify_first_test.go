package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// verifyFirstCluster is an operator on a ClusterVersion, namespace and
// release cache of its own, installed by image.
type verifyFirstCluster struct {
	op     *testOperator
	ns     string
	cvName string
	cache  string
	// verifier is the verification ConfigMap the installed release carries.
	verifier  []byte
	installed string
}

// newVerifyFirstCluster is an operator that installed nothing yet.
func newVerifyFirstCluster(t *testing.T, name string) *verifyFirstCluster {
	t.Helper()
	c := &verifyFirstCluster{ns: testCluster.CreateNamespace(t), cvName: uniqueName(t, name), cache: t.TempDir()}
	c.verifier = verifierManifest(t, newClients(t).kube, signaturetest.MakeKey(t, "release", ""))
	c.op = c.newOperator(t)
	return c
}

// install installs 1.0.0, holding ConfigMap a and the verification
// ConfigMap, from reg by digest.
func (c *verifyFirstCluster) install(t *testing.T, reg *releaseimagetest.Registry) {
	t.Helper()
	c.installed = reg.Publish(t, writePayload(t, "1.0.0", map[string]string{
		"0000_20_demo_00_a.yaml":                         configMap(c.ns, "a", "1"),
		"0000_90_release-verification_00_configmap.yaml": string(c.verifier),
	}))
	c.op.request(t, "1.0.0", false)
	c.op.requestImage(t, c.installed, false)
	if out := c.op.sync(t); out.Result == nil || !out.Result.Complete() || out.Applied != "1.0.0" {
		t.Fatalf("install by image: %+v", out)
	}
}

// newOperator is a new operator process on c's ClusterVersion and cache.
func (c *verifyFirstCluster) newOperator(t *testing.T) *testOperator {
	t.Helper()
	return newOperatorOn(t, &operator.DirStore{Root: t.TempDir()}, c.cvName, c.ns, nil, nil, func(cfg *operator.Config) {
		p, err := releaseimage.NewPuller(releaseimage.Config{CacheDir: c.cache})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Puller = p
	})
}

// refuseUnsigned publishes version, unsigned, holding ConfigMap name, asks
// for it by digest and wants it refused for its verification.
func (c *verifyFirstCluster) refuseUnsigned(t *testing.T, reg *releaseimagetest.Registry, version, name string) {
	t.Helper()
	image := reg.Publish(t, writePayload(t, version, map[string]string{"0000_20_demo_00_" + name + ".yaml": configMap(c.ns, name, "1")}))
	reg.Take()
	c.op.requestImage(t, image, false)
	out := c.op.sync(t)
	cond := requireCondition(t, c.op.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
	if !strings.HasPrefix(cond.Message, "The update cannot be verified: ") || out.VerifyErr == nil {
		t.Errorf("%s: ReleaseAccepted message %q, verification error %v", version, cond.Message, out.VerifyErr)
	}
	var manifests, blobs []string
	for _, req := range reg.Take() {
		switch {
		case strings.Contains(req, "/manifests/"):
			manifests = append(manifests, req)
		case strings.Contains(req, "/blobs/"):
			blobs = append(blobs, req)
		case req != "GET /v2/":
			t.Errorf("%s: the registry served %s", version, req)
		}
	}
	if len(manifests)+len(blobs) > 0 {
		t.Errorf("%s: the registry served %d manifest and %d blob requests of an unsigned release: %v %v; want none", version, len(manifests), len(blobs), manifests, blobs)
	}
	if newClients(t).get(t, configMapGVK, c.ns, name) != nil {
		t.Errorf("%s: ConfigMap %s of the refused release exists", version, name)
	}
}

// wantOnlyInstalledCached fails unless the cache holds the installed
// release's entry and nothing else.
func (c *verifyFirstCluster) wantOnlyInstalledCached(t *testing.T) {
	t.Helper()
	des, err := os.ReadDir(c.cache)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	want := strings.Replace(c.installed[strings.Index(c.installed, "@")+1:], ":", "-", 1)
	if len(got) != 1 || got[0] != want {
		t.Errorf("the cache holds %v; want only the running release's %s", got, want)
	}
}

// TestOperatorVerifiesAnImageBeforeReadingIt: on a cluster whose running
// release carries the verification ConfigMap, an unsigned update by digest
// is refused as the CVO refuses it, verified before it is downloaded: the
// registry serves no manifest and no blob of it, and the cache gets
// nothing of it.
func TestOperatorVerifiesAnImageBeforeReadingIt(t *testing.T) {
	reg := releaseimagetest.NewRegistry(t)
	c := newVerifyFirstCluster(t, "verifyfirst")
	c.install(t, reg)
	c.refuseUnsigned(t, reg, "1.0.1", "unsigned")
	c.wantOnlyInstalledCached(t)
}

// TestOperatorRestartsAfterRefusedImagesWithoutTheRegistry: eight unsigned
// updates refused one after another leave the running release in the
// cache, so that a new process, with the registry gone, reconciles it.
func TestOperatorRestartsAfterRefusedImagesWithoutTheRegistry(t *testing.T) {
	c := newVerifyFirstCluster(t, "refusedrestart")
	var host string
	// The registry serves until this subtest ends. What it finds wrong
	// does not stop the restart: that is checked whatever the cache holds.
	t.Run("refused while the registry serves", func(t *testing.T) {
		reg := releaseimagetest.NewRegistry(t)
		host = reg.Host
		c.install(t, reg)
		for i := 1; i <= 8; i++ {
			c.refuseUnsigned(t, reg, fmt.Sprintf("1.0.%d", i), fmt.Sprintf("unsigned-%d", i))
		}
	})
	if c.installed == "" {
		t.FailNow()
	}
	if conn, err := net.Dial("tcp", host); err == nil {
		conn.Close()
		t.Fatalf("the registry at %s still answers", host)
	}
	c.wantOnlyInstalledCached(t)

	// What the restart must put back.
	if err := newClients(t).kube.CoreV1().ConfigMaps(c.ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restarted := c.newOperator(t)
	out := restarted.sync(t)
	if out.CurrentErr != nil || out.Applied != "1.0.0" || out.Mode != graph.ModeReconcile || out.Result == nil || !out.Result.Complete() {
		t.Fatalf("after a restart without the registry: applied %q in mode %s, current release error %v; want 1.0.0 reconciled", out.Applied, out.Mode, out.CurrentErr)
	}
	if cm := newClients(t).get(t, configMapGVK, c.ns, "a"); cm == nil {
		t.Error("ConfigMap a of the running release was not put back")
	}
	// The last request is still refused, from the signatures alone.
	requireCondition(t, restarted.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
}
