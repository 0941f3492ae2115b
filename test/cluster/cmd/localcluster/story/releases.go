package story

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/openpgp"
	"golang.org/x/crypto/openpgp/armor"
	"golang.org/x/crypto/openpgp/s2k"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/signature"
)

// Releases are the story's release images, published by Publish.
type Releases struct {
	// Signed maps each version of the story to its image by digest,
	// repository@sha256:<hex>, signed by the demo's key.
	Signed map[string]string
	// Unsigned is a rebuild of ReleaseRemove with an extra ConfigMap,
	// UnsignedMarker, pushed without a signature.
	Unsigned string
	// SignatureFiles are the signature ConfigMap manifests `release sign`
	// wrote, one per signed release, for ApplySignatures.
	SignatureFiles []string
}

// UnsignedMarker is the ConfigMap, in namespace demo-config, that only the
// unsigned image carries: its absence shows that nothing of it was applied.
const UnsignedMarker = "unsigned-build"

// The names Publish gives what it writes under PublishOptions.Dir, which
// the commands it prints use.
const (
	keyFile      = "release.key"
	verifierFile = "release-verification.yaml"
	// verifierManifest sorts after every manifest of the examples: the
	// namespace it lives in is the cluster's, not the payload's.
	verifierManifest = "0000_90_release-verification_00_configmap.yaml"
	repository       = "demo/release"
)

// PublishOptions configure Publish. All are required.
type PublishOptions struct {
	// CLI is the payload-applier binary whose release commands publish.
	CLI string
	// Payloads holds a payload directory per version of the story.
	Payloads string
	// Dir receives the key, the payloads as published and the signatures.
	Dir string
	// Registry receives the images; its store is the verifier's.
	Registry *Registry
	// Out receives the commands and what they print.
	Out io.Writer
}

// Publish does what a release team does, with the commands it would run:
// it makes a signing key, puts its public half into every release as the
// verification ConfigMap (so that the release a cluster runs verifies the
// next one), packs and pushes each release to the registry, and signs each
// digest into a signature ConfigMap manifest. It also pushes Unsigned.
func Publish(ctx context.Context, opts PublishOptions) (*Releases, error) {
	// The commands run in Dir, where a relative CLI path means nothing.
	cli, err := filepath.Abs(opts.CLI)
	if err != nil {
		return nil, err
	}
	opts.CLI = cli
	if err := os.MkdirAll(filepath.Join(opts.Dir, "payloads"), 0o755); err != nil {
		return nil, err
	}
	fpr, err := writeSigningKey(filepath.Join(opts.Dir, keyFile))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Out, "\n  # in %s\n", opts.Dir)
	fmt.Fprintf(opts.Out, "  # %s: a new RSA signing key %s (what gpg --quick-gen-key and --export-secret-keys give)\n", keyFile, fpr)
	pub := publisher{opts: opts}
	if _, err := pub.run(ctx, "release", "sign", "--key", keyFile, "--emit-verifier", verifierFile, "--store-url", opts.Registry.StoreURL()); err != nil {
		return nil, err
	}
	verifier, err := os.ReadFile(filepath.Join(opts.Dir, verifierFile))
	if err != nil {
		return nil, err
	}
	rels := &Releases{Signed: map[string]string{}}
	for _, v := range []string{ReleaseInstall, ReleaseRemove, ReleaseMinor} {
		dir := filepath.Join("payloads", v)
		if err := pub.copyPayload(v, dir, map[string][]byte{verifierManifest: verifier}); err != nil {
			return nil, err
		}
		image, err := pub.pack(ctx, dir, v)
		if err != nil {
			return nil, err
		}
		sigs := filepath.Join("signatures", v+".yaml")
		if err := os.MkdirAll(filepath.Join(opts.Dir, "signatures"), 0o755); err != nil {
			return nil, err
		}
		if _, err := pub.run(ctx, "release", "sign", image, "--key", keyFile, "--configmap", sigs); err != nil {
			return nil, err
		}
		rels.Signed[v] = image
		rels.SignatureFiles = append(rels.SignatureFiles, filepath.Join(opts.Dir, sigs))
	}

	// Built outside the release process: the same release with something
	// added, which no key of the release team signed.
	fmt.Fprintf(opts.Out, "\n  # and %s built by someone else, with an extra ConfigMap %s, pushed unsigned:\n", ReleaseRemove, UnsignedMarker)
	dir := filepath.Join("payloads", ReleaseRemove+"-unsigned")
	if err := pub.copyPayload(ReleaseRemove, dir, map[string][]byte{
		verifierManifest: verifier,
		"0000_30_demo-config_09_" + UnsignedMarker + ".yaml": []byte(unsignedMarkerManifest),
	}); err != nil {
		return nil, err
	}
	if rels.Unsigned, err = pub.pack(ctx, dir, ReleaseRemove+"-unsigned"); err != nil {
		return nil, err
	}
	return rels, nil
}

const unsignedMarkerManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + UnsignedMarker + `
  namespace: demo-config
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
data:
  note: added after the release team signed 1.0.1
`

// writeSigningKey makes an RSA key, as the verifiers read no EdDSA keys,
// and writes its armored secret half to path; it returns its fingerprint.
// Go's openpgp makes it so that the demo needs no gpg.
func writeSigningKey(path string) (string, error) {
	key, err := openpgp.NewEntity("payload-applier demo", "release signing", "release@demo.example.com", nil)
	if err != nil {
		return "", fmt.Errorf("make a signing key: %w", err)
	}
	// NewEntity states no hash preference, and signers then fall back to
	// RIPEMD-160, which Go does not build in; gpg's keys prefer SHA-256.
	// SerializePrivate signs the identities again, with this preference.
	sha256, ok := s2k.HashToHashId(crypto.SHA256)
	if !ok {
		return "", errors.New("openpgp knows no SHA-256")
	}
	for _, id := range key.Identities {
		id.SelfSignature.PreferredHash = []uint8{sha256}
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return "", err
	}
	if err := key.SerializePrivate(w, nil); err != nil {
		return "", fmt.Errorf("write the signing key: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return "", err
	}
	return signature.Fingerprint(key), nil
}

// publisher runs the CLI in PublishOptions.Dir, printing each command.
type publisher struct{ opts PublishOptions }

// copyPayload copies the payload of version to dir, relative to Dir, with
// extra files added.
func (p publisher) copyPayload(version, dir string, extra map[string][]byte) error {
	to := filepath.Join(p.opts.Dir, dir)
	if err := os.CopyFS(to, os.DirFS(filepath.Join(p.opts.Payloads, version))); err != nil {
		return fmt.Errorf("copy release %s: %w", version, err)
	}
	for name, data := range extra {
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pack pushes the payload in dir as tag and returns the image by digest.
func (p publisher) pack(ctx context.Context, dir, tag string) (string, error) {
	out, err := p.run(ctx, "release", "pack", dir, "--to", p.opts.Registry.Host+"/"+repository+":"+tag)
	if err != nil {
		return "", err
	}
	image := strings.TrimSpace(out)
	if !strings.Contains(image, "@sha256:") {
		return "", fmt.Errorf("release pack printed %q, not an image by digest", image)
	}
	return image, nil
}

// run runs the CLI with args and returns its standard output.
func (p publisher) run(ctx context.Context, args ...string) (string, error) {
	fmt.Fprintf(p.opts.Out, "  $ payload-applier %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, p.opts.CLI, args...)
	cmd.Dir = p.opts.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()+stderr.String()), "\n") {
		if line != "" {
			fmt.Fprintln(p.opts.Out, "  "+line)
		}
	}
	if err != nil {
		return "", fmt.Errorf("payload-applier %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

// ApplySignatures creates the signature ConfigMaps in the cluster, as
// `kubectl apply -f` would, and the namespace they live in, which an
// OpenShift installer creates.
func (r *Releases) ApplySignatures(ctx context.Context, kubeconfig string, out io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: signature.SignaturesNamespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	for _, path := range r.SignatureFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(data, &cm); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, &cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the signature ConfigMap of %s: %w", path, err)
		}
		fmt.Fprintf(out, "  created ConfigMap %s/%s from %s\n", cm.Namespace, cm.Name, filepath.Base(path))
	}
	return nil
}
