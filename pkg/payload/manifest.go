package payload

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/openshift/library-go/pkg/manifest"
)

// Annotations the applier reads. docs/annotations.md describes each one.
const (
	DeleteAnnotation     = "release.openshift.io/delete"
	CreateOnlyAnnotation = "release.openshift.io/create-only"
	// OperandCleanupAnnotation, "Supported" on a CRD's delete manifest,
	// is the payload author's half of the opt-in to operand cleanup.
	OperandCleanupAnnotation = "release.openshift.io/operand-cleanup"
	// OperandNamespacesAnnotation limits operand cleanup to the listed
	// namespaces, comma-separated; absent means every namespace.
	OperandNamespacesAnnotation = "release.openshift.io/operand-namespaces"
	// OperandCleanupSupported is the one value OperandCleanupAnnotation takes.
	OperandCleanupSupported = "Supported"
	// VerificationConfigMapAnnotation marks the ConfigMap whose keyrings and
	// signature stores verify the releases that follow this one (library-go's
	// verify.ReleaseAnnotationConfigMapVerifier; pkg/signature reads it).
	VerificationConfigMapAnnotation = "release.openshift.io/verification-config-map"
)

// ObjectID names one object in a cluster the way the CVO does: group, kind,
// namespace and name. The version is left out on purpose, so that a manifest
// that moves an object to a newer API version still names the same object.
type ObjectID struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the ID as Kind.group/namespace/name, dropping empty parts.
func (id ObjectID) String() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return kind + "/" + id.Name
	}
	return kind + "/" + id.Namespace + "/" + id.Name
}

// Manifest is one document of a payload file, with where it came from.
type Manifest struct {
	manifest.Manifest

	// File is the path relative to the payload root, for example
	// "release-manifests/0000_50_olm_07-collect-profiles.cronjob.yaml".
	File string
	// Line is the 1-based line at which the document starts in File.
	Line int
	// RunLevel and Component come from a 0000_<runlevel>_<component>_ file
	// name. RunLevel is -1 and Component is empty when the name does not parse.
	RunLevel  int
	Component string
	// Index is the 0-based position of the manifest in payload order: in a
	// filtered release, its position in Release.Manifests. Skipped
	// manifests have Index -1.
	Index int

	// seq is the position among every document of the payload, before any
	// filter, so that a release can be filtered again in the same order.
	seq int
	// src is the document's text and srcLine the line at which src starts,
	// used to point findings at an annotation rather than the document.
	src     []byte
	srcLine int
	// rawHash is Raw's Hash once DropSource has dropped Raw.
	rawHash uint64
}

// ID returns the object the manifest names.
func (m *Manifest) ID() ObjectID {
	return ObjectID{
		Group:     m.GVK.Group,
		Kind:      m.GVK.Kind,
		Namespace: m.Obj.GetNamespace(),
		Name:      m.Obj.GetName(),
	}
}

// Delete reports whether the manifest asks for its object to be deleted.
// Only the exact value "true" counts; validation rejects any other value.
func (m *Manifest) Delete() bool {
	return m.Obj.GetAnnotations()[DeleteAnnotation] == "true"
}

// CreateOnly reports whether the object is created when missing and never updated.
func (m *Manifest) CreateOnly() bool {
	return m.Obj.GetAnnotations()[CreateOnlyAnnotation] == "true"
}

// Position renders file:line for messages.
func (m *Manifest) Position() string {
	return fmt.Sprintf("%s:%d", m.File, m.Line)
}

// Release is a loaded payload: its metadata and its manifests in the order
// the CVO reads them. Load returns a filtered, validated release; LoadAll
// returns every document unfiltered, and Filter derives filtered releases
// from it without reading the files again.
type Release struct {
	// Dir is the payload root that was loaded, as the caller named it.
	Dir string
	// Version is the semantic version from release-metadata.
	Version string
	// Channels are the update channels from release-metadata, sorted.
	Channels []string
	// URL is metadata.url from release-metadata, often an errata link.
	URL string
	// Images maps the image-references tag names to their pull specs
	// (tags whose from.kind is DockerImage).
	Images map[string]string
	// Manifests holds every manifest the inclusion filters kept, delete
	// manifests included, in payload order.
	Manifests []*Manifest
	// Skipped holds the manifests the inclusion filters dropped, with why.
	Skipped []Skipped
	// Warnings holds the findings below error severity that Load found;
	// LoadAll leaves it empty and returns its findings instead.
	Warnings []Finding
}

// DropSource forgets the documents' text, which only serves to point lint
// findings at the line of a key, and their JSON copy (Raw), of which only
// its hash is used once loaded, so that a caller that holds the release for
// long, like the operator, keeps the parsed objects alone. Findings made
// afterwards point at the start of their document.
func (r *Release) DropSource() {
	for _, m := range r.every() {
		m.src = nil
		if m.Raw != nil {
			m.rawHash, m.Raw = hashRaw(m.Raw), nil
		}
	}
}

// Hash fingerprints the manifest's content (its JSON, Raw), also after
// DropSource: whether a manifest changed between passes or releases.
func (m *Manifest) Hash() uint64 {
	if m.Raw == nil {
		return m.rawHash
	}
	return hashRaw(m.Raw)
}

// Library returns the manifest as library-go's type, whose functions read
// Raw: after DropSource, Raw is encoded again from the object.
func (m *Manifest) Library() (manifest.Manifest, error) {
	lm := m.Manifest
	if lm.Raw == nil && lm.Obj != nil {
		raw, err := json.Marshal(lm.Obj.Object)
		if err != nil {
			return manifest.Manifest{}, err
		}
		lm.Raw = raw
	}
	return lm, nil
}

func hashRaw(raw []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return h.Sum64()
}

// Skipped is a manifest that an inclusion filter left out.
type Skipped struct {
	Manifest *Manifest
	// Reason is the filter's message, for example
	// "include.release.openshift.io/self-managed-high-availability unset".
	Reason string
	// Filter names the filter that dropped the manifest: one of the
	// Filter* constants.
	Filter string
}
