package releaseimage

import (
	"archive/tar"
	"context"
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
// Each bound refuses the whole image with a ContentError naming it.
type Limits struct {
	// FileBytes bounds one extracted file: the payload loader's limit,
	// so that nothing is extracted that the loader would refuse.
	FileBytes int64
	// TotalBytes bounds the extracted files together.
	TotalBytes int64
	// Files bounds the files and directories extracted, the parent
	// directories an entry implies included.
	Files int
	// Depth bounds how many names deep a path in the release directories
	// goes, whiteouts included: release-manifests/a.yaml is 2 deep. The
	// loader reads the top of those directories only.
	Depth int
	// Whiteouts bounds the whiteouts, all layers together, that hide
	// something in the release directories: each is held in memory until
	// the extraction ends. Whiteouts elsewhere are not kept or counted.
	Whiteouts int
	// ReadBytes bounds what is read of the image's layers, compressed as
	// the manifest sizes them and uncompressed as read, layers outside
	// the release directories included.
	ReadBytes int64
	// Layers bounds the image's layers, checked before any blob is read;
	// Docker refuses images of more than 127.
	Layers int
	// ManifestBytes bounds an image manifest or index, which is read into
	// memory whole; registries refuse manifests over 4 MiB.
	ManifestBytes int64
	// Indexes bounds the indexes that lead to the image: one for a
	// multi-architecture release, two for an index of indexes.
	Indexes int
}

// DefaultLimits leave room for the largest OpenShift releases (a few
// thousand manifests, tens of MiB) and their base layers.
func DefaultLimits() Limits {
	return Limits{
		FileBytes:     payload.MaxFileBytes,
		TotalBytes:    256 << 20,
		Files:         20000,
		Depth:         32,
		Whiteouts:     10000,
		ReadBytes:     4 << 30,
		Layers:        127,
		ManifestBytes: 4 << 20,
		Indexes:       2,
	}
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	orDefault(&l.FileBytes, d.FileBytes)
	orDefault(&l.TotalBytes, d.TotalBytes)
	orDefault(&l.Files, d.Files)
	orDefault(&l.Depth, d.Depth)
	orDefault(&l.Whiteouts, d.Whiteouts)
	orDefault(&l.ReadBytes, d.ReadBytes)
	orDefault(&l.Layers, d.Layers)
	orDefault(&l.ManifestBytes, d.ManifestBytes)
	orDefault(&l.Indexes, d.Indexes)
	return l
}

func orDefault[T int | int64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// sizeOf says n bytes in MiB when that is exact, as the limits are.
func sizeOf(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ContentError is a release image whose content the puller refuses: an
// unsafe or oversized layer entry, or no release-manifests directory.
type ContentError struct {
	Layer  string // the layer's digest, when an entry is refused
	Entry  string // the entry's name as the layer's tar holds it
	Reason string
	// Limit names the Limits field that refused the image, "" when no
	// limit did; Max is its value.
	Limit string
	Max   int64
}

func (e *ContentError) Error() string {
	msg := e.Reason
	if e.Limit != "" {
		msg = fmt.Sprintf("%s (limit %s: %d)", msg, e.Limit, e.Max)
	}
	if e.Entry == "" {
		return msg
	}
	return fmt.Sprintf("layer %s: entry %q: %s", e.Layer, e.Entry, msg)
}

// overLimit is a refusal by the limit named field, whose value is max.
func overLimit(field string, max int64, format string, a ...any) *ContentError {
	return &ContentError{Reason: fmt.Sprintf(format, a...), Limit: field, Max: max}
}

// maxNameBytes bounds one name of a path, as file systems do; a longer
// whiteout name would only be held in memory.
const maxNameBytes = 255

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
	ctx    context.Context
	root   *os.Root
	limits Limits
	// sync makes a file or directory durable; the cache renames the
	// extraction into place only once all of it is on disk.
	sync func(*os.File) error

	// decided holds the paths a higher layer (or this one) settled, and
	// whether that entry is a directory; lower entries for them lose.
	// Every directory made, parents included, is in it.
	decided map[string]decision
	// removed and opaque hold the whiteouts of the layers above.
	removed, opaque map[string]bool

	files     int
	whiteouts int
	written   int64
	read      int64
}

type decision struct {
	layer int
	dir   bool
}

// extract flattens layers into dir, which is synced before it returns;
// it stops as soon as ctx ends.
func extract(ctx context.Context, dir string, layers []v1.Layer, limits Limits, sync func(*os.File) error) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	x := &extraction{ctx: ctx, root: root, limits: limits, sync: sync, decided: map[string]decision{}, removed: map[string]bool{}, opaque: map[string]bool{}}
	for i := len(layers) - 1; i >= 0; i-- {
		if err := x.layer(i, layers[i]); err != nil {
			return err
		}
	}
	if info, err := root.Stat(payload.ReleaseManifestDir); err != nil || !info.IsDir() {
		return &ContentError{Reason: "the image holds no " + payload.ReleaseManifestDir + "/ directory; is it a release image?"}
	}
	return x.syncDirs()
}

// syncDirs makes the directories' entries durable; files were synced as
// they were written.
func (x *extraction) syncDirs() error {
	dirs := []string{"."}
	for p, d := range x.decided {
		if d.dir {
			dirs = append(dirs, p)
		}
	}
	for _, p := range dirs {
		if err := syncPath(x.root, p, x.sync); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(root *os.Root, name string, sync func(*os.File) error) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	err = sync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// countingReader counts what is read through it against a limit shared
// by all layers, and stops reading once the extraction's context ends.
type countingReader struct {
	r io.Reader
	x *extraction
}

func (c countingReader) Read(p []byte) (int, error) {
	if err := c.x.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.x.read += int64(n)
	if c.x.read > c.x.limits.ReadBytes {
		return n, overLimit("ReadBytes", c.x.limits.ReadBytes, "the image's layers hold more than %s uncompressed", sizeOf(c.x.limits.ReadBytes))
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
		if err := x.ctx.Err(); err != nil {
			return x.readError(digest, err)
		}
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

type refuseFunc func(ce *ContentError) error

func (x *extraction) entry(index int, layer string, hdr *tar.Header, body io.Reader, removed, opaque map[string]bool) error {
	refuseWith := func(ce *ContentError) error {
		ce.Layer, ce.Entry = layer, hdr.Name
		return ce
	}
	refuse := func(format string, a ...any) error {
		return refuseWith(&ContentError{Reason: fmt.Sprintf(format, a...)})
	}
	p, err := entryPath(hdr.Name)
	if err != nil {
		return refuse("%v", err)
	}
	if p == "." {
		return nil
	}
	base, parent := path.Base(p), path.Dir(p)
	// Only whiteouts that can hide something of the release directories
	// are kept: nothing else of the image is written.
	if base == opaqueWhiteout {
		if parent == "." || isReleasePath(parent) {
			return x.whiteout(opaque, parent, refuseWith)
		}
		return nil
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		if hidden := path.Join(parent, strings.TrimPrefix(base, whiteoutPrefix)); isReleasePath(hidden) {
			return x.whiteout(removed, hidden, refuseWith)
		}
		return nil
	}
	if !isReleasePath(p) {
		return nil
	}
	if err := x.checkPath(p, refuseWith); err != nil {
		return err
	}
	if x.hidden(index, p) {
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(index, p, refuseWith)
	case tar.TypeReg, tar.TypeRegA: // old archivers still write TypeRegA
		return x.writeFile(index, p, hdr.Size, body, refuseWith)
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

// checkPath refuses a release path deeper than the limit or with a name
// longer than a file system holds, before anything is made for it.
func (x *extraction) checkPath(p string, refuse refuseFunc) error {
	if depth := strings.Count(p, "/") + 1; depth > x.limits.Depth {
		return refuse(overLimit("Depth", int64(x.limits.Depth), "a path more than %d names deep", x.limits.Depth))
	}
	for _, name := range strings.Split(p, "/") {
		if len(name) > maxNameBytes {
			return refuse(&ContentError{Reason: fmt.Sprintf("a name of more than %d bytes", maxNameBytes)})
		}
	}
	return nil
}

// whiteout records a whiteout of this layer, counted against the limit.
func (x *extraction) whiteout(set map[string]bool, p string, refuse refuseFunc) error {
	if err := x.checkPath(p, refuse); err != nil {
		return err
	}
	if set[p] {
		return nil
	}
	x.whiteouts++
	if x.whiteouts > x.limits.Whiteouts {
		return refuse(overLimit("Whiteouts", int64(x.limits.Whiteouts), "more than %d whiteouts in the release directories", x.limits.Whiteouts))
	}
	set[p] = true
	return nil
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

func (x *extraction) count(refuse refuseFunc) error {
	x.files++
	if x.files > x.limits.Files {
		return refuse(overLimit("Files", int64(x.limits.Files), "more than %d files and directories in the release", x.limits.Files))
	}
	return nil
}

func (x *extraction) mkdir(index int, p string, refuse refuseFunc) error {
	if _, ok := x.decided[p]; ok {
		return nil
	}
	return x.ensureDir(index, p, refuse)
}

// ensureDir makes p and its parents, each counted as the file it is. The
// modes are the extractor's own, whatever the layer says: the release is
// only ever read.
func (x *extraction) ensureDir(index int, p string, refuse refuseFunc) error {
	if p == "." {
		return nil
	}
	var made string
	for _, elem := range strings.Split(p, "/") {
		made = path.Join(made, elem)
		if d, ok := x.decided[made]; ok && d.dir {
			continue
		}
		if err := x.count(refuse); err != nil {
			return err
		}
		x.decided[made] = decision{layer: index, dir: true}
		if err := x.root.Mkdir(made, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

func (x *extraction) writeFile(index int, p string, size int64, body io.Reader, refuse refuseFunc) error {
	if size > x.limits.FileBytes {
		return refuse(overLimit("FileBytes", x.limits.FileBytes, "%d bytes, more than the %s a payload file may hold", size, sizeOf(x.limits.FileBytes)))
	}
	if x.written+size > x.limits.TotalBytes {
		return refuse(overLimit("TotalBytes", x.limits.TotalBytes, "the release's files come to more than %s", sizeOf(x.limits.TotalBytes)))
	}
	if d, ok := x.decided[p]; ok && d.dir {
		return refuse(&ContentError{Reason: "a file where the layer also has a directory"})
	}
	if err := x.ensureDir(index, path.Dir(p), refuse); err != nil {
		return err
	}
	if err := x.count(refuse); err != nil {
		return err
	}
	x.decided[p] = decision{layer: index}
	f, err := x.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, size))
	if err == nil && n == size {
		err = x.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != size {
		return refuse(&ContentError{Reason: "the layer ends inside the file"})
	}
	x.written += size
	return nil
}
