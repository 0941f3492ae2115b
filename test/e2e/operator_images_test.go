package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// requestImage points the ClusterVersion's spec.desiredUpdate at image.
func (o *testOperator) requestImage(t *testing.T, image string, force bool) {
	t.Helper()
	cv := o.clusterVersion(t)
	cv.Spec.DesiredUpdate = &configv1.Update{Image: image, Force: force}
	if _, err := o.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// verifierManifest is the verification ConfigMap, as a release carries it,
// that trusts key; it makes sure the namespace signatures are read from
// exists, and deletes the ConfigMap, once applied, when the test ends.
func verifierManifest(t *testing.T, admin kubernetes.Interface, key *signaturetest.Key) []byte {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: signature.SignaturesNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	verifier := signaturetest.VerifierFor(t, []string{"http://127.0.0.1:1"}, key)
	verifier.Name = uniqueName(t, "release-verification")
	t.Cleanup(func() {
		_ = admin.CoreV1().ConfigMaps(verifier.Namespace).Delete(context.Background(), verifier.Name, metav1.DeleteOptions{})
	})
	manifest, err := signature.Manifest(verifier)
	if err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestOperatorUpdatesByImage: installed from a directory whose release
// carries the verification ConfigMap, the operator updates by digest
// through spec.desiredUpdate.image once the update's signature is in
// openshift-config-managed; refuses an unsigned one without writing any
// of it; lets a forced one through with the risk in history; says the
// registry's message for a missing image; and after a restart reconciles
// from its cache without pulling.
func TestOperatorUpdatesByImage(t *testing.T) {
	admin := newClients(t).kube
	ns := testCluster.CreateNamespace(t)
	key := signaturetest.MakeKey(t, "release", "")
	verifierYAML := verifierManifest(t, admin, key)
	store := writeStore(t, map[string]map[string]string{"1.0.0": {
		"0000_20_demo_00_a.yaml":                         configMap(ns, "a", "1"),
		"0000_90_release-verification_00_configmap.yaml": string(verifierYAML),
	}})
	reg := releaseimagetest.NewRegistry(t)
	cache := t.TempDir()
	withPuller := func(c *operator.Config) {
		p, err := releaseimage.NewPuller(releaseimage.Config{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		c.Puller = p
	}
	cvName := uniqueName(t, "byimage")
	op := newOperatorOn(t, &operator.DirStore{Root: store}, cvName, ns, nil, nil, withPuller)
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install 1.0.0 from the directory: %+v", out)
	}

	// Unsigned: refused, and nothing of it written.
	unsigned := reg.Publish(t, writePayload(t, "1.0.1", map[string]string{"0000_20_demo_00_a.yaml": configMap(ns, "a", "unsigned"), "0000_20_demo_01_b.yaml": configMap(ns, "unsigned", "1")}))
	mark := auditMark(t)
	op.requestImage(t, unsigned, false)
	op.sync(t)
	c := requireCondition(t, op.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
	if !strings.HasPrefix(c.Message, "The update cannot be verified: ") {
		t.Errorf("ReleaseAccepted message %q", c.Message)
	}
	for _, e := range applierWrites(t, mark) {
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Resource == "configmaps" && (e.ObjectRef.Name == "unsigned" || e.Verb != "patch") {
			t.Errorf("the unsigned release was written: %s %s", e.Verb, e.RequestURI)
		}
	}
	if cm := newClients(t).get(t, configMapGVK, ns, "a"); cm == nil || cm.Object["data"].(map[string]any)["key"] != "1" {
		t.Errorf("ConfigMap a must keep 1.0.0's data: %v", cm)
	}

	// A missing image: the registry's own message. Signed, as verification
	// comes before the registry is asked.
	missing := strings.Replace(unsigned, unsigned[strings.Index(unsigned, "@")+1:], "sha256:"+strings.Repeat("0", 64), 1)
	createSignatureConfigMap(t, admin, key, "sha256:"+strings.Repeat("0", 64))
	op.requestImage(t, missing, false)
	op.sync(t)
	c = requireCondition(t, op.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonRetrievePayload)
	if !strings.Contains(c.Message, "MANIFEST_UNKNOWN") {
		t.Errorf("ReleaseAccepted message %q; want the registry's MANIFEST_UNKNOWN", c.Message)
	}

	// Signed: Completed, verified, by digest.
	signed := reg.Publish(t, writePayload(t, "1.0.2", map[string]string{"0000_20_demo_00_a.yaml": configMap(ns, "a", "signed")}))
	createSignatureConfigMap(t, admin, key, signed[strings.Index(signed, "@")+1:])
	op.requestImage(t, signed, false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("update to the signed 1.0.2: %+v", out)
	}
	cv := op.clusterVersion(t)
	requireCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded)
	if h := cv.Status.History[0]; h.Version != "1.0.2" || h.State != configv1.CompletedUpdate || !h.Verified || h.Image != signed || cv.Status.Desired.Image != signed {
		t.Fatalf("history[0] %+v, desired image %q; want 1.0.2 completed and verified, by digest %s", h, cv.Status.Desired.Image, signed)
	}

	// Forced unsigned: applied, the risk recorded. 1.0.2 carries no
	// verification ConfigMap, so no update from it can be verified.
	forced := reg.Publish(t, writePayload(t, "1.0.3", map[string]string{"0000_20_demo_00_a.yaml": configMap(ns, "a", "forced")}))
	op.requestImage(t, forced, true)
	op.sync(t)
	cv = op.clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.0.3" || h.Verified || !strings.Contains(h.AcceptedRisks, "cannot be verified, but continuing anyway because the update was forced") {
		t.Fatalf("history[0] %+v; want 1.0.3 unverified with the risk recorded", h)
	}

	// A new process on the same cache reconciles 1.0.3 without pulling.
	reg.Take()
	restarted := newOperatorOn(t, &operator.DirStore{Root: store}, cvName, ns, nil, nil, withPuller)
	if out := restarted.sync(t); out.Applied != "1.0.3" || out.Mode != "reconcile" || !out.Result.Complete() {
		t.Fatalf("after a restart: applied %q in mode %s; want 1.0.3 reconciled", out.Applied, out.Mode)
	}
	if got := reg.Take(); len(got) > 0 {
		t.Errorf("the restarted operator asked the registry %v; want its cache used", got)
	}
}

// TestOperatorInstallsByImageAndRefusesWhatItCannotTrust: a cluster is
// installed from spec.desiredUpdate.image alone (an install is not
// verified, as with the CVO); then an update signed by a key the running
// release does not trust, an image whose layer escapes its directory, and
// an image on a registry nobody answers for are each refused with the
// CVO's reason, and none of their objects is written.
func TestOperatorInstallsByImageAndRefusesWhatItCannotTrust(t *testing.T) {
	admin := newClients(t).kube
	ns := testCluster.CreateNamespace(t)
	trusted := signaturetest.MakeKey(t, "release", "")
	stranger := signaturetest.MakeKey(t, "stranger", "")
	verifierYAML := verifierManifest(t, admin, trusted)
	reg := releaseimagetest.NewRegistry(t)
	cache := t.TempDir()
	op := newOperatorOn(t, &operator.DirStore{Root: t.TempDir()}, uniqueName(t, "installimage"), ns, nil, nil, func(c *operator.Config) {
		p, err := releaseimage.NewPuller(releaseimage.Config{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		c.Puller = p
	})

	t.Log("install by image alone")
	installed := reg.Publish(t, writePayload(t, "1.0.0", map[string]string{
		"0000_20_demo_00_a.yaml":                         configMap(ns, "a", "1"),
		"0000_90_release-verification_00_configmap.yaml": string(verifierYAML),
	}))
	op.request(t, "1.0.0", false)
	op.requestImage(t, installed, false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() || out.Applied != "1.0.0" {
		t.Fatalf("install by image: %+v", out)
	}
	cv := op.clusterVersion(t)
	if h := cv.Status.History[0]; cv.Status.Desired.Image != installed || h.Image != installed || h.State != configv1.CompletedUpdate || h.Verified {
		t.Fatalf("desired image %q, history[0] %+v; want %s completed, not verified (an install is not)", cv.Status.Desired.Image, h, installed)
	}

	refusedWithNothingWritten := func(image string, reasons []string, says, object string) {
		t.Helper()
		mark := auditMark(t)
		op.requestImage(t, image, false)
		op.sync(t)
		c := condition(op.clusterVersion(t), clusterversion.ConditionReleaseAccepted)
		if c.Status != configv1.ConditionFalse || !slices.Contains(reasons, c.Reason) || !strings.Contains(c.Message, says) {
			t.Errorf("ReleaseAccepted %s %s %q; want False, one of %v, saying %q", c.Status, c.Reason, c.Message, reasons, says)
		}
		for _, e := range applierWrites(t, mark) {
			if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == object {
				t.Errorf("the refused release was written: %s %s", e.Verb, e.RequestURI)
			}
		}
		if newClients(t).get(t, configMapGVK, ns, object) != nil {
			t.Errorf("ConfigMap %s of the refused release exists", object)
		}
	}

	t.Log("signed by a key the running release does not trust")
	strangers := reg.Publish(t, writePayload(t, "1.0.1", map[string]string{"0000_20_demo_00_b.yaml": configMap(ns, "b", "1")}))
	createSignatureConfigMap(t, admin, stranger, strangers[strings.Index(strangers, "@")+1:])
	refusedWithNothingWritten(strangers, []string{clusterversion.ReasonImageVerificationFailed}, "The update cannot be verified: ", "b")

	// Signed from here on, as verification comes before the registry is asked.
	t.Log("a layer that writes out of its directory")
	escape := escapingRelease(t, reg.Host+"/e2e/release:1.0.2", ns)
	createSignatureConfigMap(t, admin, trusted, escape[strings.Index(escape, "@")+1:])
	refusedWithNothingWritten(escape, []string{clusterversion.ReasonRetrievePayload, clusterversion.ReasonLoadPayload}, `".."`, "escaped")

	t.Log("a registry nobody answers for")
	unreachable := "127.0.0.1:1/e2e/release@sha256:" + strings.Repeat("1", 64)
	createSignatureConfigMap(t, admin, trusted, "sha256:"+strings.Repeat("1", 64))
	refusedWithNothingWritten(unreachable, []string{clusterversion.ReasonRetrievePayload}, "connection refused", "none")
}
