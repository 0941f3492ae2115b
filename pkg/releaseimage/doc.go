// Package releaseimage reads and writes release images: a release is a
// container image whose release-manifests/ (and manifests/) directories
// hold the payload, as OpenShift ships it.
//
// Reading: a Puller fetches a Ref (registry/repository@sha256:<hex>, or a
// tag, which is resolved to its digest first) with go-containerregistry,
// authenticated from the docker config, an auth file or
// $REGISTRY_AUTH_FILE. A multi-architecture index yields the image of
// the platform asked for. Everything read is checked against the digest
// by the library. Every size, count and depth is bounded (Limits): a
// manifest or index, nested indexes and the layer count are judged
// before any blob is read. The image's layers are flattened, whiteouts
// honoured, into the release directories only: an entry with an absolute
// path or a "..", a link, a device or a FIFO in them refuses the whole
// image, as does anything over a limit. Extraction ends with the fetch's
// context. The result lands in a partial directory that is synced and
// renamed into the cache (CacheDir/sha256-<hex>/) only once whole, so a
// half-extracted release is never seen and a refused one leaves nothing
// behind; a cached digest is not pulled again unless its entry, checked
// whenever it is read, is damaged. The directory is then loaded with
// payload.Load like any payload.
//
// Writing: Pack builds a release image from a payload directory that
// loads (one layer holding only the files the loader reads, dated so
// that a payload always packs to one digest, the version in the
// io.openshift.release label); Push and WriteLayout publish it to a
// registry or an OCI layout.
package releaseimage
