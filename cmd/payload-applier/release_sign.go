package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/openshift/library-go/pkg/verify/util"
	"github.com/spf13/cobra"
	"golang.org/x/crypto/openpgp"
	corev1 "k8s.io/api/core/v1"

	"github.com/payload-applier/payload-applier/pkg/signature"
)

type releaseSignOptions struct {
	key            string
	passphraseFile string
	identity       string
	configMap      string
	store          string
	emitVerifier   string
	keyName        string
	storeURLs      []string
}

func init() { releaseSubcommands = append(releaseSubcommands, newReleaseSignCmd) }

func newReleaseSignCmd() *cobra.Command {
	o := &releaseSignOptions{}
	cmd := &cobra.Command{
		Use:   "sign [REF@sha256:DIGEST | sha256:DIGEST] --key KEYRING (--configmap FILE | --store DIR | --emit-verifier FILE --store-url URL)",
		Short: "Sign a release image's digest, and publish the key that verifies it",
		Long: `sign writes the atomic container signature of a release image, the JSON
{"critical": {"identity": {"docker-reference": REF}, "image":
{"docker-manifest-digest": DIGEST}, "type": "atomic container signature"},
"optional": {...}} signed with the secret key in KEYRING as an OpenPGP message,
which is what the cluster-version operator and payload-applier verify.

Where the signature goes:
  --configmap FILE  a ConfigMap manifest in ` + signature.SignaturesNamespace + `, labelled
                    ` + signature.SignaturesLabel + `, key sha256-<hex>-N;
                    create it in the cluster (kubectl apply -f FILE). "-" is stdout.
  --store DIR       DIR/sha256=<hex>/signature-N, a signature store for any static
                    HTTP server to serve.
An existing FILE or DIR gains the next N, so that a second key signs the same
release beside the first: every key of the release's verifier must sign.

The image is named by digest, REF@sha256:<hex>: REF is the identity the
signature vouches for. A bare sha256:<hex> needs --identity. Nothing is pulled.

--emit-verifier FILE writes the verification ConfigMap a release carries,
` + signature.VerifierConfigMapNamespace + `/` + signature.VerifierConfigMapName + `, annotated
release.openshift.io/verification-config-map: the public half of KEYRING as
verifier-public-key-NAME and each --store-url as store-N (at least one is
needed). Put it in the payload of the release a cluster runs: that release's
keys verify the updates that follow it. An existing FILE gains the key.

KEYRING is one secret key, as gpg --export-secret-keys [--armor] writes it. It
must be RSA, DSA or ECDSA: the verifiers read no EdDSA keys.`,
		Example: `  gpg --batch --passphrase '' --quick-gen-key 'Release Signing <release@example.com>' rsa3072 sign never
  gpg --armor --export-secret-keys release@example.com > release.key
  payload-applier release sign --key release.key --emit-verifier payload/0000_90_release-verification_00_configmap.yaml \
      --store-url https://signatures.example.com/release
  payload-applier release sign quay.io/example/release@sha256:<hex> --key release.key --store ./signatures
  payload-applier release sign quay.io/example/release@sha256:<hex> --key release.key --configmap signature.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.key, "key", "", "file holding the secret key to sign with (required)")
	f.StringVar(&o.passphraseFile, "passphrase-file", "", "file holding the key's passphrase, when it has one")
	f.StringVar(&o.identity, "identity", "", "the image reference the signature vouches for (default: REF)")
	f.StringVar(&o.configMap, "configmap", "", `write the signature into this ConfigMap manifest ("-": stdout)`)
	f.StringVar(&o.store, "store", "", "write the signature into this signature store directory")
	f.StringVar(&o.emitVerifier, "emit-verifier", "", "write the key into this verification ConfigMap manifest")
	f.StringVar(&o.keyName, "key-name", "", "NAME of verifier-public-key-NAME (default: the key ID)")
	f.StringArrayVar(&o.storeURLs, "store-url", nil, "a signature store URL for --emit-verifier; repeatable")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

func (o *releaseSignOptions) run(cmd *cobra.Command, args []string) error {
	signing := o.configMap != "" || o.store != ""
	switch {
	case len(args) == 0 && o.emitVerifier == "":
		return withExitCode(exitUsage, errors.New("name the release to sign (REF@sha256:<hex>), or give --emit-verifier"))
	case len(args) == 1 && !signing:
		return withExitCode(exitUsage, errors.New("say where the signature goes: --configmap FILE or --store DIR"))
	case len(args) == 0 && signing:
		return withExitCode(exitUsage, errors.New("--configmap and --store need the release to sign (REF@sha256:<hex>)"))
	case len(o.storeURLs) > 0 && o.emitVerifier == "":
		return withExitCode(exitUsage, errors.New("--store-url goes with --emit-verifier"))
	case o.configMap == "-" && o.emitVerifier == "-":
		return withExitCode(exitUsage, errors.New("--configmap and --emit-verifier cannot both write to stdout"))
	}
	key, err := o.readKey()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	report := cmd.ErrOrStderr()
	if len(args) == 1 {
		if err := o.sign(cmd, key, args[0]); err != nil {
			return err
		}
	}
	if o.emitVerifier != "" {
		if err := o.writeVerifier(cmd, key); err != nil {
			return err
		}
		if o.emitVerifier != "-" {
			fmt.Fprintf(report, "wrote the public key %s to %s\n", signature.Fingerprint(key), o.emitVerifier)
		}
	}
	return nil
}

func (o *releaseSignOptions) readKey() (*openpgp.Entity, error) {
	data, err := os.ReadFile(o.key)
	if err != nil {
		return nil, err
	}
	var passphrase []byte
	if o.passphraseFile != "" {
		p, err := os.ReadFile(o.passphraseFile)
		if err != nil {
			return nil, err
		}
		// A file written with echo ends in a newline that is not part of it.
		passphrase = []byte(strings.TrimRight(string(p), "\r\n"))
	}
	key, err := signature.ReadSigningKey(data, passphrase)
	if err != nil {
		if o.passphraseFile == "" && strings.Contains(err.Error(), "passphrase") {
			err = fmt.Errorf("%w: give it with --passphrase-file", err)
		}
		return nil, fmt.Errorf("%s: %w", o.key, err)
	}
	return key, nil
}

func (o *releaseSignOptions) sign(cmd *cobra.Command, key *openpgp.Entity, ref string) error {
	identity, digest, err := signature.ParseReference(ref)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	if o.identity != "" {
		identity = o.identity
	}
	if identity == "" {
		return withExitCode(exitUsage, fmt.Errorf("%s names no image: give REF@%s, or --identity REF", ref, digest))
	}
	sig, err := signature.Sign(key, signature.Claim{Identity: identity, Digest: digest, Creator: "payload-applier " + applierVersion(), Time: time.Now()})
	if err != nil {
		return withExitCode(exitFailed, err)
	}
	report := cmd.ErrOrStderr()
	fmt.Fprintf(report, "signed %s as %s with key %s\n", digest, identity, signature.Fingerprint(key))
	if o.configMap != "" {
		if err := o.writeSignatureConfigMap(cmd, digest, sig); err != nil {
			return err
		}
		if o.configMap != "-" {
			fmt.Fprintf(report, "wrote the signature to %s\n", o.configMap)
		}
	}
	if o.store != "" {
		path, err := signature.WriteToStore(o.store, digest, sig)
		if err != nil {
			return withExitCode(exitFailed, err)
		}
		fmt.Fprintf(report, "wrote the signature to %s\n", path)
	}
	return nil
}

func (o *releaseSignOptions) writeSignatureConfigMap(cmd *cobra.Command, digest string, sig []byte) error {
	existing, err := readConfigMapFile(o.configMap)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	cm, err := signature.AddToConfigMap(existing, digest, sig)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("%s: %w", o.configMap, err))
	}
	return writeConfigMapFile(cmd.OutOrStdout(), o.configMap, cm)
}

func (o *releaseSignOptions) writeVerifier(cmd *cobra.Command, key *openpgp.Entity) error {
	existing, err := readConfigMapFile(o.emitVerifier)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	public, err := signature.PublicKey(key)
	if err != nil {
		return withExitCode(exitFailed, err)
	}
	name := o.keyName
	if name == "" {
		fpr := signature.Fingerprint(key)
		name = strings.ToLower(fpr[len(fpr)-16:])
	}
	cm, err := signature.AddToVerifierConfigMap(existing, name, public, o.storeURLs)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("%s: %w", o.emitVerifier, err))
	}
	return writeConfigMapFile(cmd.OutOrStdout(), o.emitVerifier, cm)
}

// readConfigMapFile reads the ConfigMap manifest at path, nil when there is
// none yet.
func readConfigMapFile(path string) (*corev1.ConfigMap, error) {
	if path == "-" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cm, err := util.ReadConfigMap(data)
	if err == nil && cm == nil {
		err = errors.New("not a ConfigMap")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cm, nil
}

// writeConfigMapFile writes cm as a manifest to path, atomically, or to
// stdout when path is "-".
func writeConfigMapFile(stdout io.Writer, path string, cm *corev1.ConfigMap) error {
	data, err := signature.Manifest(cm)
	if err != nil {
		return withExitCode(exitFailed, err)
	}
	if path == "-" {
		path = ""
	}
	if err := writeOutput(stdout, path, data); err != nil {
		return withExitCode(exitFailed, err)
	}
	return nil
}
