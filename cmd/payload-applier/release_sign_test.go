package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/verify/util"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// sign runs `release sign` in process; the parent `release` command comes
// with the merge of release pack.
func sign(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newReleaseSignCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

func mustSign(t *testing.T, args ...string) string {
	t.Helper()
	_, stderr, code := sign(t, args...)
	if code != exitOK {
		t.Fatalf("release sign %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stderr
}

func testDigest(s string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s))) }

// loadRelease loads a payload whose one manifest is the file at path.
func loadRelease(t *testing.T, path string) *payload.Release {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{"0000_90_release-verification_00_configmap.yaml": string(data)})
	release, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// clusterWith is a fake cluster holding the ConfigMap manifest at path.
func clusterWith(t *testing.T, path string) *fake.Clientset {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := util.ReadConfigMap(data)
	if err != nil || cm == nil {
		t.Fatalf("%s is not a ConfigMap: %v", path, err)
	}
	return fake.NewSimpleClientset(cm)
}

// TestReleaseSignPublishesWhatVerifyAccepts follows a release team: make a
// key with gpg, put its verifier in the payload, sign one release into a
// ConfigMap and another into a store served over HTTP; a cluster running
// that payload verifies both through the CVO's two lookup paths, and gpg
// itself accepts the signature.
func TestReleaseSignPublishesWhatVerifyAccepts(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	work := t.TempDir()
	keyFile := writeFile(t, filepath.Join(work, "alice.key"), alice.Secret)
	storeDir := filepath.Join(work, "signatures")
	srv := httptest.NewServer(http.FileServer(http.Dir(storeDir)))
	t.Cleanup(srv.Close)
	verifierFile := filepath.Join(work, "verifier.yaml")
	sigFile := filepath.Join(work, "signature.yaml")
	inConfigMap, inStore, unsigned := testDigest("in a ConfigMap"), testDigest("in a store"), testDigest("unsigned")

	mustSign(t, "--key", keyFile, "--emit-verifier", verifierFile, "--store-url", srv.URL)
	mustSign(t, "quay.io/example/release@"+inConfigMap, "--key", keyFile, "--configmap", sigFile)
	stderr := mustSign(t, "quay.io/example/release@"+inStore, "--key", keyFile, "--store", storeDir)
	written := filepath.Join(storeDir, "sha256="+strings.TrimPrefix(inStore, "sha256:"), "signature-1")
	if !strings.Contains(stderr, "wrote the signature to "+written) {
		t.Errorf("release sign --store did not report %s:\n%s", written, stderr)
	}

	client := clusterWith(t, sigFile)
	v, err := signature.FromRelease(loadRelease(t, verifierFile), signature.Options{ConfigMaps: client.CoreV1()})
	if err != nil || v == nil {
		t.Fatalf("FromRelease = %v, %v", v, err)
	}
	ctx := context.Background()
	if err := v.Verify(ctx, inConfigMap); err != nil {
		t.Errorf("the ConfigMap signature: %v", err)
	}
	if err := v.Verify(ctx, inStore); err != nil {
		t.Errorf("the store signature: %v", err)
	}
	if err := v.Verify(ctx, unsigned); err == nil {
		t.Error("an unsigned release verified")
	}

	home := signaturetest.NewHome(t)
	verifierCM, err := util.ReadConfigMap(mustRead(t, verifierFile))
	if err != nil {
		t.Fatal(err)
	}
	var public string
	for k, v := range verifierCM.Data {
		if strings.HasPrefix(k, "verifier-public-key-") {
			public = v
		}
	}
	signaturetest.GPG(t, home, []byte(public), "--import")
	status := string(signaturetest.GPG(t, home, nil, "--status-fd", "1", "--verify", written))
	if !strings.Contains(status, "[GNUPG:] VALIDSIG "+alice.Fingerprint) {
		t.Errorf("gpg --verify with the emitted public key did not accept the signature:\n%s", status)
	}
	claim := string(signaturetest.GPG(t, home, nil, "--decrypt", written))
	for _, want := range []string{`"docker-reference":"quay.io/example/release"`, `"docker-manifest-digest":"` + inStore + `"`, `"creator":"payload-applier `} {
		if !strings.Contains(claim, want) {
			t.Errorf("the signed claim lacks %s: %s", want, claim)
		}
	}
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReleaseSignASecondKey: a second signer adds its key to the verifier
// and its signature to the same ConfigMap; until it has, the release is
// refused, as every key must sign.
func TestReleaseSignASecondKey(t *testing.T) {
	work := t.TempDir()
	keyFiles := map[string]string{}
	for _, k := range []*signaturetest.Key{signaturetest.MakeKey(t, "alice", ""), signaturetest.MakeKey(t, "bob", "")} {
		keyFiles[k.Name] = writeFile(t, filepath.Join(work, k.Name+".key"), k.Secret)
	}
	verifierFile, sigFile := filepath.Join(work, "verifier.yaml"), filepath.Join(work, "signature.yaml")
	digest := testDigest("release")
	ref := "quay.io/example/release@" + digest
	mustSign(t, "--key", keyFiles["alice"], "--key-name", "alice", "--emit-verifier", verifierFile, "--store-url", "http://127.0.0.1:1")
	mustSign(t, "--key", keyFiles["bob"], "--key-name", "bob", "--emit-verifier", verifierFile)
	mustSign(t, ref, "--key", keyFiles["alice"], "--configmap", sigFile)
	release := loadRelease(t, verifierFile)

	verify := func() error {
		v, err := signature.FromRelease(release, signature.Options{ConfigMaps: clusterWith(t, sigFile).CoreV1()})
		if err != nil {
			t.Fatal(err)
		}
		return v.Verify(context.Background(), digest)
	}
	if err := verify(); err == nil || !strings.Contains(err.Error(), "verifier-public-key-bob") {
		t.Fatalf("signed by alice only: %v; want a refusal naming bob's keyring", err)
	}
	mustSign(t, ref, "--key", keyFiles["bob"], "--configmap", sigFile)
	if err := verify(); err != nil {
		t.Fatalf("signed by both: %v", err)
	}
	cm, err := util.ReadConfigMap(mustRead(t, sigFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.BinaryData) != 2 {
		t.Errorf("the ConfigMap holds %d signatures, want 2", len(cm.BinaryData))
	}
}

func TestReleaseSignPassphrase(t *testing.T) {
	carol := signaturetest.MakeKey(t, "carol", "s3cret")
	work := t.TempDir()
	keyFile := writeFile(t, filepath.Join(work, "carol.key"), carol.Secret)
	passFile := writeFile(t, filepath.Join(work, "pass"), []byte("s3cret\n"))
	ref := "r@" + testDigest("r")
	_, stderr, code := sign(t, ref, "--key", keyFile, "--store", work)
	if code != exitUsage || !strings.Contains(stderr, "give it with --passphrase-file") {
		t.Errorf("without the passphrase: exit %d\n%s", code, stderr)
	}
	mustSign(t, ref, "--key", keyFile, "--passphrase-file", passFile, "--store", work)
}

func TestReleaseSignConfigMapToStdout(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	keyFile := writeFile(t, filepath.Join(t.TempDir(), "alice.key"), alice.Secret)
	digest := testDigest("r")
	stdout, stderr, code := sign(t, "r@"+digest, "--key", keyFile, "--configmap", "-")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cm, err := util.ReadConfigMap([]byte(stdout))
	if err != nil || cm == nil {
		t.Fatalf("stdout is not a ConfigMap (%v):\n%s", err, stdout)
	}
	if _, ok := cm.BinaryData["sha256-"+strings.TrimPrefix(digest, "sha256:")+"-1"]; !ok || cm.Namespace != signature.SignaturesNamespace {
		t.Errorf("ConfigMap %s/%s with keys %v", cm.Namespace, cm.Name, cm.BinaryData)
	}
}

func TestReleaseSignUsageErrors(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	work := t.TempDir()
	keyFile := writeFile(t, filepath.Join(work, "alice.key"), alice.Secret)
	publicFile := writeFile(t, filepath.Join(work, "alice.pub"), alice.Public)
	notAConfigMap := writeFile(t, filepath.Join(work, "other.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"))
	digest := testDigest("r")
	tests := map[string]struct {
		args []string
		want string
	}{
		"nothing to do":                     {[]string{"--key", keyFile}, "name the release to sign"},
		"no key":                            {[]string{"r@" + digest, "--store", work}, `"key" not set`},
		"nowhere to write":                  {[]string{"r@" + digest, "--key", keyFile}, "--configmap FILE or --store DIR"},
		"a bare digest without an identity": {[]string{digest, "--key", keyFile, "--store", work}, "--identity REF"},
		"a tag":                             {[]string{"r:1.0", "--key", keyFile, "--store", work}, "is not a digest"},
		"a public key":                      {[]string{"r@" + digest, "--key", publicFile, "--store", work}, "holds no secret key"},
		"a missing key file":                {[]string{"r@" + digest, "--key", filepath.Join(work, "none"), "--store", work}, "no such file"},
		"a verifier without a store":        {[]string{"--key", keyFile, "--emit-verifier", filepath.Join(work, "v.yaml")}, "did not provide any signature stores"},
		"a store URL without a verifier":    {[]string{"r@" + digest, "--key", keyFile, "--store", work, "--store-url", "https://x"}, "--store-url goes with --emit-verifier"},
		"a file that is not a ConfigMap":    {[]string{"r@" + digest, "--key", keyFile, "--configmap", notAConfigMap}, "not a ConfigMap"},
		"two outputs on stdout":             {[]string{"r@" + digest, "--key", keyFile, "--configmap", "-", "--emit-verifier", "-", "--store-url", "https://x"}, "cannot both write to stdout"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := sign(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, exitUsage, tc.want, stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(work); len(entries) != 3 {
		t.Errorf("refused commands wrote files: %v", entries)
	}
}
