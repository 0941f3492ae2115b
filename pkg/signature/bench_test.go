package signature_test

import (
	"context"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// BenchmarkVerify is what verification adds to reading a release by image:
// the running release's verifier is built from its ConfigMap and checks a
// new digest against a signature ConfigMap in the cluster, as the operator
// does once per target.
func BenchmarkVerify(b *testing.B) {
	alice := signaturetest.MakeKey(b, "alice", "")
	client := cluster(b, &trace{}, signatureConfigMap(b, digestA, signedBy(b, alice, digestA)))
	// The store is never asked: the ConfigMap answers first.
	release := signaturetest.Release(b, signaturetest.VerifierFor(b, []string{"https://127.0.0.1:1/unused"}, alice))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := signature.FromRelease(release, signature.Options{ConfigMaps: client.CoreV1()})
		if err != nil || v == nil {
			b.Fatalf("verifier %v: %v", v, err)
		}
		if err := v.Verify(ctx, digestA); err != nil {
			b.Fatal(err)
		}
	}
}
