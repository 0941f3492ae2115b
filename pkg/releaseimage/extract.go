package releaseimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Limits bound what a release image may make the puller read and write.
type Limits struct {
	// FileBytes bounds one extracted file: the payload loader's limit,
	// so that nothing is extracted that the loader would refuse.
	FileBytes int64
	// TotalBytes bounds the extracted files together.
	TotalBytes int64
	// Files bounds the files and directories extracted.
	Files int
	// ReadBytes bounds what is read of the image's layers, compressed as
	// the manifest sizes them and uncompressed as read, layers outside
	// the release directories included.
	ReadBytes int64
}

// DefaultLimits leave room for the largest OpenShift releases (a few
// thousand manifests, tens of MiB) and their base layers.
func DefaultLimits() Limits {
	return Limits{
		FileBytes:  payload.MaxFileBytes,
		TotalBytes: 256 << 20,
		Files:      20000,
		ReadBytes:  4 << 30,
	}
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.FileBytes <= 0 {
		l.FileBytes = d.FileBytes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = d.TotalBytes
	}
	if l.Files <= 0 {
		l.Files = d.Files
	}
	if l.ReadBytes <= 0 {
		l.ReadBytes = d.ReadBytes
	}
	return l
}

// ContentError is a release image whose content the puller refuses: an
// unsafe or oversized layer entry, or no release-manifests directory.
type ContentError struct {
	Layer  string // the layer's digest, when an entry is refused
	Entry  string // the entry's name as the layer's tar holds it
	Reason string
}

func (e *ContentError) Error() string {
	if e.Entry == "" {
		return e.Reason
	}
	return fmt.Sprintf("layer %s: entry %q: %s", e.Layer, e.Entry, e.Reason)
}

// The OCI image spec's whiteouts: a ".wh." file hides its name in lower
// layers, and ".wh..wh..opq" hides all of its directory's lower content.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// isReleasePath says whether p (clean, relative) is one of the
// directories a release is read from, or inside one. Nothing else of an
// image is written.
func isReleasePath(p string) bool {
	top, _, _ := strings.Cut(p, "/")
	return top == payload.ReleaseManifestDir || top == payload.CVOManifestDir
}

// extraction flattens an image's layers into the release directories of
// dir. Layers are read from the top one down, so the first entry seen
// for a path is the one the flattened image holds, and lower entries
// that a whiteout or a higher entry hides are never written.
type extraction struct {
	root   *os.Root
	limits Limits

	// decided holds the paths a higher layer (or this one) settled, and
	// whether that entry is a directory; lower entries for them lose.
	decided map[string]decision
	// removed and opaque hold the whiteouts of the layers above.
	removed, opaque map[string]bool

	files   int
	written int64
	read    int64
}

type decision struct {
	layer int
	dir   bool
}

func extract(dir string, layers []v1.Layer, limits Limits) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	x := &extraction{root: root, limits: limits, decided: map[string]decision{}, removed: map[string]bool{}, opaque: map[string]bool{}}
	for i := len(layers) - 1; i >= 0; i-- {
		if err := x.layer(i, layers[i]); err != nil {
			return err
		}
	}
	if info, err := root.Stat(payload.ReleaseManifestDir); err != nil || !info.IsDir() {
		return &ContentError{Reason: "the image holds no " + payload.ReleaseManifestDir + "/ directory; is it a release image?"}
	}
	return nil
}

// countingReader counts what is read through it against a limit shared
// by all layers.
type countingReader struct {
	r io.Reader
	x *extraction
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.x.read += int64(n)
	if c.x.read > c.x.limits.ReadBytes {
		return n, &ContentError{Reason: fmt.Sprintf("the image's layers hold more than %d MiB uncompressed", c.x.limits.ReadBytes>>20)}
	}
	return n, err
}

func (x *extraction) layer(index int, layer v1.Layer) error {
	digest, err := layer.Digest()
	if err != nil {
		return err
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	r := countingReader{r: rc, x: x}
	tr := tar.NewReader(r)
	removed, opaque := map[string]bool{}, map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return x.readError(digest, err)
		}
		if err := x.entry(index, digest.String(), hdr, tr, removed, opaque); err != nil {
			return x.readError(digest, err)
		}
	}
	// The blob's digest is checked as its last byte is read: read past the
	// tar's end so that a layer that is not the one asked for fails here.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return x.readError(digest, err)
	}
	// A layer's whiteouts hide what the layers below it hold, not its own
	// entries.
	for p := range removed {
		x.removed[p] = true
	}
	for p := range opaque {
		x.opaque[p] = true
	}
	return nil
}

func (x *extraction) readError(layer v1.Hash, err error) error {
	var ce *ContentError
	if errors.As(err, &ce) {
		if ce.Layer == "" && ce.Entry != "" {
			ce.Layer = layer.String()
		}
		return ce
	}
	return fmt.Errorf("layer %s: %w", layer, err)
}

func (x *extraction) entry(index int, layer string, hdr *tar.Header, body io.Reader, removed, opaque map[string]bool) error {
	refuse := func(format string, a ...any) error {
		return &ContentError{Layer: layer, Entry: hdr.Name, Reason: fmt.Sprintf(format, a...)}
	}
	p, err := entryPath(hdr.Name)
	if err != nil {
		return refuse("%v", err)
	}
	if p == "." {
		return nil
	}
	base, parent := path.Base(p), path.Dir(p)
	if base == opaqueWhiteout {
		opaque[parent] = true
		return nil
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		removed[path.Join(parent, strings.TrimPrefix(base, whiteoutPrefix))] = true
		return nil
	}
	if !isReleasePath(p) || x.hidden(index, p) {
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(index, p, refuse)
	case tar.TypeReg, tar.TypeRegA: // old archivers still write TypeRegA
		return x.writeFile(index, p, hdr.Size, body, refuse)
	case tar.TypeSymlink:
		return refuse("a symbolic link (to %q); a release holds regular files and directories only", hdr.Linkname)
	case tar.TypeLink:
		return refuse("a hard link (to %q); a release holds regular files and directories only", hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return refuse("a device file; a release holds regular files and directories only")
	case tar.TypeFifo:
		return refuse("a FIFO; a release holds regular files and directories only")
	default:
		return refuse("an entry of tar type %q; a release holds regular files and directories only", hdr.Typeflag)
	}
}

// entryPath is the clean relative path of a tar entry's name, refusing
// a name that is absolute or has a ".." element: such an entry could
// only be meant to write outside the image.
func entryPath(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", errors.New("an absolute path; image layers hold relative paths")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", errors.New(`a path with ".."; it could lead out of the extraction directory`)
		}
	}
	if strings.ContainsRune(name, 0) {
		return "", errors.New("a path with a NUL byte")
	}
	return path.Clean(name), nil
}

// hidden says whether a higher layer removed p or one of its parents, made
// a parent opaque, or put a file where a parent of p would be, or whether
// a higher layer already wrote p itself.
func (x *extraction) hidden(index int, p string) bool {
	if d, ok := x.decided[p]; ok && d.layer != index {
		return true
	}
	for q := p; ; q = path.Dir(q) {
		if x.removed[q] {
			return true
		}
		if q != p {
			if x.opaque[q] {
				return true
			}
			if d, ok := x.decided[q]; ok && !d.dir {
				return true
			}
		}
		if q == "." {
			return false
		}
	}
}

func (x *extraction) count(refuse func(string, ...any) error) error {
	x.files++
	if x.files > x.limits.Files {
		return refuse("more than %d files and directories in the release", x.limits.Files)
	}
	return nil
}

func (x *extraction) mkdir(index int, p string, refuse func(string, ...any) error) error {
	if _, ok := x.decided[p]; ok {
		return nil
	}
	if err := x.count(refuse); err != nil {
		return err
	}
	x.decided[p] = decision{layer: index, dir: true}
	return x.ensureDir(p)
}

// ensureDir makes p and its parents. The modes are the extractor's own,
// whatever the layer says: the release is only ever read.
func (x *extraction) ensureDir(p string) error {
	var made string
	for _, elem := range strings.Split(p, "/") {
		made = path.Join(made, elem)
		if err := x.root.Mkdir(made, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

func (x *extraction) writeFile(index int, p string, size int64, body io.Reader, refuse func(string, ...any) error) error {
	if size > x.limits.FileBytes {
		return refuse("%d bytes, more than the %d MiB a payload file may hold", size, x.limits.FileBytes>>20)
	}
	if x.written+size > x.limits.TotalBytes {
		return refuse("the release's files come to more than %d MiB", x.limits.TotalBytes>>20)
	}
	if d, ok := x.decided[p]; ok && d.dir {
		return refuse("a file where the layer also has a directory")
	}
	if err := x.count(refuse); err != nil {
		return err
	}
	x.decided[p] = decision{layer: index}
	if err := x.ensureDir(path.Dir(p)); err != nil {
		return err
	}
	f, err := x.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != size {
		return refuse("the layer ends inside the file")
	}
	x.written += size
	return nil
}
