package signature

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/openshift/library-go/pkg/manifest"
	"github.com/openshift/library-go/pkg/verify"
	"github.com/openshift/library-go/pkg/verify/util"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// AddToConfigMap returns cm with signature added as digest's next
// signature (binaryData sha256-<hex>-N). A nil cm starts the ConfigMap
// library-go's verify.GetSignaturesAsConfigmap makes: named after the
// digest, in SignaturesNamespace, labelled SignaturesLabel. A second
// signer adds to the same ConfigMap. cm is not changed.
func AddToConfigMap(cm *corev1.ConfigMap, digest string, signature []byte) (*corev1.ConfigMap, error) {
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	if cm == nil {
		return verify.GetSignaturesAsConfigmap(digest, [][]byte{signature})
	}
	if cm.Namespace != SignaturesNamespace {
		return nil, fmt.Errorf("ConfigMap %s/%s is not in %s, where signatures are looked up", cm.Namespace, cm.Name, SignaturesNamespace)
	}
	if _, ok := cm.Labels[SignaturesLabel]; !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s lacks the label %s that signature ConfigMaps carry", cm.Namespace, cm.Name, SignaturesLabel)
	}
	prefix, err := util.DigestToKeyPrefix(digest, "-")
	if err != nil {
		return nil, err
	}
	out := cm.DeepCopy()
	if out.BinaryData == nil {
		out.BinaryData = map[string][]byte{}
	}
	key := prefix + "-" + strconv.Itoa(firstFree(func(n int) bool {
		_, taken := out.BinaryData[prefix+"-"+strconv.Itoa(n)]
		return taken
	}))
	out.BinaryData[key] = signature
	return out, nil
}

// WriteToStore writes signature as digest's next signature in the store
// directory dir, <dir>/sha256=<hex>/signature-N with N the first free
// number: readers stop at the first missing N. Any static HTTP server can
// serve dir as a store. It returns the file written.
func WriteToStore(dir, digest string, signature []byte) (string, error) {
	if err := checkDigest(digest); err != nil {
		return "", err
	}
	segment, err := util.DigestToKeyPrefix(digest, "=")
	if err != nil {
		return "", err
	}
	sigDir := filepath.Join(dir, segment)
	if err := os.MkdirAll(sigDir, 0o755); err != nil {
		return "", err
	}
	var statErr error
	n := firstFree(func(n int) bool {
		_, err := os.Lstat(filepath.Join(sigDir, "signature-"+strconv.Itoa(n)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			statErr = err
		}
		return err == nil
	})
	if statErr != nil {
		return "", statErr
	}
	path := filepath.Join(sigDir, "signature-"+strconv.Itoa(n))
	// O_EXCL: a signer running at the same time must not be overwritten.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(signature); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

func firstFree(taken func(n int) bool) int {
	n := 1
	for taken(n) {
		n++
	}
	return n
}

// The verification ConfigMap a release carries, as OpenShift names it.
const (
	VerifierConfigMapName      = "release-verification"
	VerifierConfigMapNamespace = "openshift-config-managed"
	publicKeyPrefix            = "verifier-public-key-"
	storePrefix                = "store-"
)

var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// AddToVerifierConfigMap returns cm with the armored public key under
// verifier-public-key-<name> and each store URL not yet listed under
// store-N. A nil cm starts the ConfigMap a release carries to have its
// successors verified: annotated payload.VerificationConfigMapAnnotation
// and included in every known cluster profile, so that no inclusion filter
// drops it. The result is checked as FromRelease will read it. cm is not
// changed.
func AddToVerifierConfigMap(cm *corev1.ConfigMap, name string, publicKey []byte, stores []string) (*corev1.ConfigMap, error) {
	if !configMapKey.MatchString(publicKeyPrefix + name) {
		return nil, fmt.Errorf("%q cannot name a ConfigMap key", name)
	}
	var out *corev1.ConfigMap
	if cm == nil {
		out = &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        VerifierConfigMapName,
				Namespace:   VerifierConfigMapNamespace,
				Annotations: map[string]string{payload.VerificationConfigMapAnnotation: ""},
			},
		}
		for _, profile := range payload.KnownProfiles {
			out.Annotations[payload.IncludePrefix+profile] = "true"
		}
	} else {
		if _, ok := cm.Annotations[payload.VerificationConfigMapAnnotation]; !ok {
			return nil, fmt.Errorf("ConfigMap %s/%s lacks the annotation %s", cm.Namespace, cm.Name, payload.VerificationConfigMapAnnotation)
		}
		out = cm.DeepCopy()
	}
	if out.Data == nil {
		out.Data = map[string]string{}
	}
	out.Data[publicKeyPrefix+name] = string(publicKey)
	listed := map[string]bool{}
	for k, v := range out.Data {
		if strings.HasPrefix(k, storePrefix) {
			listed[strings.TrimSpace(v)] = true
		}
	}
	for _, s := range stores {
		if _, err := parseStoreURL(s); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		if listed[s] {
			continue
		}
		listed[s] = true
		n := firstFree(func(n int) bool { _, taken := out.Data[storePrefix+strconv.Itoa(n)]; return taken })
		out.Data[storePrefix+strconv.Itoa(n)] = s
	}
	if err := checkVerifierConfigMap(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkVerifierConfigMap reads cm as library-go will read it from a release.
func checkVerifierConfigMap(cm *corev1.ConfigMap) error {
	raw, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	manifests, err := manifest.ParseManifests(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	v, err := verify.NewFromManifests(manifests, DefaultLimits().httpClientFor(nil))
	if err != nil {
		return err
	}
	if v == nil {
		return errors.New("library-go does not find the verification ConfigMap")
	}
	return nil
}

// Manifest renders cm as a YAML manifest, without the fields a server sets.
func Manifest(cm *corev1.ConfigMap) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	if err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	return yaml.Marshal(obj)
}
