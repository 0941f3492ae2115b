package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/verify/util"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// TestReleaseSignatureConfigMapsOnTheAPIServer: the signature ConfigMap
// `release sign --configmap` writes is stored by a real apiserver as
// written, and a verifier acting as the applier finds it through the
// label selector, in a namespace that also holds others' signatures. A user
// who may not list ConfigMaps is refused, and told why.
func TestReleaseSignatureConfigMapsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	admin := newClients(t).kube
	// Kept afterwards: the name is fixed, and a deleted namespace lingers
	// while its contents go, which would fail the next run's create.
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: signature.SignaturesNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	alice := signaturetest.MakeKey(t, "alice", "")
	mallory := signaturetest.MakeKey(t, "mallory", "")
	run := uniqueName(t, "release")
	signed := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(run+" signed")))
	forged := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(run+" forged")))
	unsigned := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(run+" unsigned")))
	for digest, k := range map[string]*signaturetest.Key{signed: alice, forged: mallory} {
		createSignatureConfigMap(t, admin, k, digest)
	}

	release := signaturetest.Release(t, signaturetest.VerifierFor(t, []string{"http://127.0.0.1:1"}, alice))
	verify := func(cfg *rest.Config, digest string) error {
		v, err := signature.FromRelease(release, signature.Options{ConfigMaps: newClientsFor(t, cfg).kube.CoreV1()})
		if err != nil {
			t.Fatal(err)
		}
		return v.Verify(ctx, digest)
	}

	applier := testCluster.ApplierRESTConfig()
	if err := verify(applier, signed); err != nil {
		t.Errorf("the signed release: %v", err)
	}
	for digest, want := range map[string]string{forged: "invalid signature", unsigned: "looked in ConfigMaps in openshift-config-managed"} {
		if err := verify(applier, digest); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a refusal saying %q", digest, err, want)
		}
	}
	nobody, err := testCluster.UserRESTConfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(nobody, signed); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a user who may not list ConfigMaps: %v; want a refusal saying forbidden", err)
	}
}

// createSignatureConfigMap signs digest with k and creates the ConfigMap
// manifest `release sign --configmap` writes, as kubectl would, checking
// that the apiserver kept it as written.
func createSignatureConfigMap(t *testing.T, kube kubernetes.Interface, k *signaturetest.Key, digest string) {
	t.Helper()
	ctx := context.Background()
	sig := k.Sign(t, signature.Claim{Identity: "quay.io/example/release", Digest: digest})
	cm, err := signature.AddToConfigMap(nil, digest, sig)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := signature.Manifest(cm)
	if err != nil {
		t.Fatal(err)
	}
	written, err := util.ReadConfigMap(manifest)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := kube.CoreV1().ConfigMaps(written.Namespace).Create(ctx, written, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the apiserver refused the signature ConfigMap:\n%s\n%v", manifest, err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps(stored.Namespace).Delete(context.Background(), stored.Name, metav1.DeleteOptions{})
	})
	for k, v := range written.BinaryData {
		if string(stored.BinaryData[k]) != string(v) {
			t.Errorf("the apiserver stored %s differently", k)
		}
	}
}
