package e2e

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// TestApplyVerifiesAReleaseImageAsTheOperatorDoes: on a cluster installed
// with `apply` from an image whose release carries the verification
// ConfigMap, `apply --payload IMAGE` of an unsigned image, named by tag,
// is resolved to its digest and refused (exit 3, naming the verification
// failure) with nothing of it written; with --force it is applied, and
// history says it was not verified and why it went ahead; a signed image
// is applied and recorded as verified.
func TestApplyVerifiesAReleaseImageAsTheOperatorDoes(t *testing.T) {
	bin, c, ns := newCLITest(t)
	key := signaturetest.MakeKey(t, "release", "")
	verifierYAML := string(verifierManifest(t, c.kube, key))
	reg := releaseimagetest.NewRegistry(t)
	cache := t.TempDir()
	publish := func(version string) string {
		return reg.Publish(t, writePayload(t, version, map[string]string{
			"0000_20_demo_00_a.yaml":                         configMap(ns, "a", version),
			"0000_20_demo_01_only.yaml":                      configMap(ns, "only-"+strings.ReplaceAll(version, ".", "-"), "1"),
			"0000_90_release-verification_00_configmap.yaml": verifierYAML,
		}))
	}
	apply := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, bin, append([]string{"apply", "--release-cache", cache, "--payload"}, args...)...)
	}
	dataOfA := func() any {
		cm := c.get(t, configMapGVK, ns, "a")
		if cm == nil {
			return nil
		}
		return cm.Object["data"].(map[string]any)["key"]
	}

	installed := publish("1.0.0")
	if code, stdout, stderr := apply(installed); code != 0 || !strings.Contains(stdout, "(install)") {
		t.Fatalf("install %s: exit %d\n%s%s", installed, code, stdout, stderr)
	}

	t.Log("unsigned, by tag, not forced: refused")
	unsigned := publish("1.0.1")
	tag := reg.Host + "/release:1.0.1"
	mark := auditMark(t)
	code, stdout, stderr := apply(tag)
	if code != 3 || !strings.Contains(stderr, "release image "+tag+" is "+unsigned) ||
		!strings.Contains(stderr, "The update cannot be verified") || !strings.Contains(stderr, "nothing of it was applied") {
		t.Errorf("apply --payload %s: exit %d; want 3, the tag resolved to %s and the verification failure named\n%s%s", tag, code, unsigned, stdout, stderr)
	}
	for _, e := range applierWrites(t, mark) {
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Resource == "configmaps" && (e.ObjectRef.Name == "only-1-0-1" || e.Verb != "patch") {
			t.Errorf("the unsigned release was written: %s %s", e.Verb, e.RequestURI)
		}
	}
	if got := dataOfA(); got != "1.0.0" {
		t.Errorf("ConfigMap a holds %v; want 1.0.0's data", got)
	}
	cv := clusterVersion(t)
	requireCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
	if h := cv.Status.History[0]; h.Version != "1.0.0" || cv.Status.Desired.Image != installed {
		t.Errorf("history[0] %+v, desired %s; want 1.0.0 still", h, cv.Status.Desired.Image)
	}

	t.Log("unsigned, forced: applied, the risk recorded")
	code, stdout, stderr = apply(unsigned, "--force")
	if code != 0 || !strings.Contains(stdout, "(update)") || !strings.Contains(stdout, "accepted risks: ") {
		t.Fatalf("apply --force --payload %s: exit %d\n%s%s", unsigned, code, stdout, stderr)
	}
	cv = clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.0.1" || h.Image != unsigned || h.State != configv1.CompletedUpdate || h.Verified ||
		!strings.Contains(h.AcceptedRisks, "cannot be verified, but continuing anyway because the update was forced") {
		t.Fatalf("history[0] %+v; want 1.0.1 completed, not verified, with the risk recorded", h)
	}
	if got := dataOfA(); got != "1.0.1" || c.get(t, configMapGVK, ns, "only-1-0-1") == nil {
		t.Errorf("the forced 1.0.1 was not applied: ConfigMap a holds %v", got)
	}

	t.Log("signed: applied and verified")
	signed := publish("1.0.2")
	createSignatureConfigMap(t, c.kube, key, signed[strings.Index(signed, "@")+1:])
	if code, stdout, stderr := apply(signed); code != 0 || !strings.Contains(stdout, "(update)") {
		t.Fatalf("apply --payload %s (signed): exit %d\n%s%s", signed, code, stdout, stderr)
	}
	cv = clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.0.2" || h.Image != signed || h.State != configv1.CompletedUpdate || !h.Verified || h.AcceptedRisks != "" {
		t.Fatalf("history[0] %+v; want 1.0.2 completed and verified, no risk", h)
	}
	if got := dataOfA(); got != "1.0.2" {
		t.Errorf("ConfigMap a holds %v; want 1.0.2's data", got)
	}
}
