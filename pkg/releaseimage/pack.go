package releaseimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// File is one entry of a layer NewLayer builds: a directory when
// Mode.IsDir(), else a regular file holding Data.
type File struct {
	Name string
	Mode fs.FileMode
	Data []byte
}

// NewLayer builds a gzipped OCI layer of files, in name order, owned by
// root and dated modified (the zero time is the Unix epoch). The same
// files and time give the same digest. Of Mode, the permissions and the
// sticky bit are kept.
func NewLayer(files []File, modified time.Time) (v1.Layer, error) {
	modified = orEpoch(modified)
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		mode := int64(f.Mode.Perm())
		if f.Mode&fs.ModeSticky != 0 {
			mode |= 0o1000 // tar's sticky bit, as /tmp wants it
		}
		hdr := &tar.Header{Name: f.Name, Mode: mode, ModTime: modified, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		if f.Mode.IsDir() {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
			hdr.Name = strings.TrimSuffix(f.Name, "/") + "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Name, err)
		}
		if !f.Mode.IsDir() {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// NewImage is an OCI image of layer alone, with cfg's platform and
// settings, dated created (the zero time is the Unix epoch), its history
// saying createdBy.
func NewImage(layer v1.Layer, cfg v1.ConfigFile, created time.Time, createdBy string) (v1.Image, error) {
	when := v1.Time{Time: orEpoch(created)}
	cfg.RootFS, cfg.History = v1.RootFS{}, nil
	img, err := mutate.ConfigFile(empty.Image, &cfg)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: when, CreatedBy: createdBy}})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, when); err != nil {
		return nil, err
	}
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON), nil
}

// orEpoch is t in UTC, or the Unix epoch for the zero time: what is built
// is dated, and dated the same on every build.
func orEpoch(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}

// PackOptions shape the image Pack builds.
type PackOptions struct {
	// Architecture is recorded in the image's config; "" is
	// runtime.GOARCH. The manifests themselves serve any architecture.
	Architecture string
	// Created dates the image and its files; the zero time is the Unix
	// epoch, so that one payload always packs to one digest.
	Created time.Time
}

// Packed is a release image Pack built, and what of the payload
// directory it left out.
type Packed struct {
	Image   v1.Image
	Release *payload.Release
	// Skipped lists, relative to the payload directory and sorted, what
	// the directories read hold that the loader does not read: left out
	// of the image (a kubeconfig or an .env beside the manifests is
	// never published). A subdirectory ends in "/".
	Skipped []string
}

// Pack is PackRelease without the list of what was left out.
func Pack(dir string, opts PackOptions) (v1.Image, *payload.Release, error) {
	p, err := PackRelease(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	return p.Image, p.Release, nil
}

// PackRelease validates the payload in dir as `apply` would load it and
// builds its release image: one layer holding what the loader reads of
// release-manifests/ (and manifests/, for a payload in the CVO layout
// that has one), the version in the io.openshift.release label. A
// payload that does not load is refused with the loader's error.
func PackRelease(dir string, opts PackOptions) (*Packed, error) {
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		return nil, err
	}
	files, skipped, err := payloadFiles(dir)
	if err != nil {
		return nil, err
	}
	arch := opts.Architecture
	if arch == "" {
		arch = runtime.GOARCH
	}
	layer, err := NewLayer(files, opts.Created)
	if err != nil {
		return nil, err
	}
	img, err := NewImage(layer, v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Config:       v1.Config{Labels: map[string]string{ReleaseLabel: rel.Version}},
	}, opts.Created, "payload-applier release pack")
	if err != nil {
		return nil, err
	}
	return &Packed{Image: img, Release: rel, Skipped: skipped}, nil
}

// loaderReads says whether the payload loader reads name in a manifest
// directory: manifests by extension (as pkg/payload's
// hasManifestExtension), and the metadata in the directory that holds it.
func loaderReads(name string, metaDir bool) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return metaDir && (name == payload.ReleaseMetadataFile || name == payload.ImageReferencesFile)
}

// payloadFiles are the files of a payload directory that the loader
// reads, placed as a release image holds them: the CVO layout as it is,
// the flat layout under release-manifests/. Everything else in the
// directories read is skipped and listed.
func payloadFiles(dir string) ([]File, []string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	dirs := map[string]string{".": payload.ReleaseManifestDir}
	metaDir := "."
	if info, err := root.Stat(payload.ReleaseManifestDir); err == nil && info.IsDir() {
		dirs = map[string]string{payload.ReleaseManifestDir: payload.ReleaseManifestDir}
		metaDir = payload.ReleaseManifestDir
		if info, err := root.Stat(payload.CVOManifestDir); err == nil && info.IsDir() {
			dirs[payload.CVOManifestDir] = payload.CVOManifestDir
		}
	}
	var skipped []string
	if metaDir != "." {
		// The CVO layout's root holds nothing the loader reads but its
		// two directories.
		entries, err := fs.ReadDir(root.FS(), ".")
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if _, ok := dirs[e.Name()]; ok && e.IsDir() {
				continue
			}
			if e.IsDir() {
				skipped = append(skipped, e.Name()+"/")
			} else {
				skipped = append(skipped, e.Name())
			}
		}
	}
	limit := DefaultLimits().TotalBytes
	var files []File
	var total int64
	for src, dst := range dirs {
		files = append(files, File{Name: dst, Mode: fs.ModeDir | 0o755})
		entries, err := fs.ReadDir(root.FS(), src)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			name := path.Join(src, e.Name())
			if e.IsDir() {
				skipped = append(skipped, name+"/")
				continue
			}
			if !loaderReads(e.Name(), src == metaDir) {
				skipped = append(skipped, name)
				continue
			}
			if strings.HasPrefix(e.Name(), whiteoutPrefix) {
				return nil, nil, fmt.Errorf("%s: a name starting %q would read as a whiteout in an image", filepath.Join(dir, name), whiteoutPrefix)
			}
			data, err := payload.ReadFile(root, name)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", dir, err)
			}
			if total += int64(len(data)); total > limit {
				return nil, nil, fmt.Errorf("%s: the payload's files come to more than %d MiB, more than a release image may hold", dir, limit>>20)
			}
			files = append(files, File{Name: path.Join(dst, e.Name()), Mode: 0o644, Data: data})
		}
	}
	sort.Strings(skipped)
	return files, skipped, nil
}

// Push writes img to ref's registry and returns its digest. A tag is
// moved to the image; a digest reference must be img's own digest.
func Push(ctx context.Context, ref Ref, img v1.Image, reg Registry) (string, error) {
	if ref.ref == nil {
		return "", errors.New("no image reference to push to")
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	if d := ref.Digest(); d != "" && d != digest.String() {
		return "", fmt.Errorf("cannot push to %s: the image's digest is %s", ref, digest)
	}
	c, err := reg.connect()
	if err != nil {
		return "", err
	}
	nref, err := c.reference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.Write(nref, img, c.options(ctx, v1.Platform{})...); err != nil {
		return "", fmt.Errorf("cannot push %s: %w", ref, err)
	}
	return digest.String(), nil
}

// refNameAnnotation names an image in an OCI layout's index.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes img into the OCI image layout at dir, created when
// missing, named refName in its index (an image named so before is
// replaced), and returns its digest.
func WriteLayout(dir string, img v1.Image, refName string) (string, error) {
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		if lp, err = layout.Write(dir, empty.Index); err != nil {
			return "", fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	anns := map[string]string{refNameAnnotation: refName}
	if err := lp.ReplaceImage(img, match.Annotation(refNameAnnotation, refName), layout.WithAnnotations(anns)); err != nil {
		return "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return digest.String(), nil
}
