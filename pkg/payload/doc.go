// Package payload turns a release payload directory into a validated,
// filtered Release, offline. It never talks to a cluster.
//
// Reading: LoadAll accepts the CVO layout (release-manifests/, with an
// optional manifests/ read first) and the flat layout that
// `oc adm release extract` writes, which also covers a release-manifests
// directory on its own. Files are read in name order; only .yaml, .yml and
// .json files count, and subdirectories are ignored.
//
// Parsing: a parse cache (parsecache.go) keeps parsed files by path and
// content hash, bounded by DefaultParseCacheBytes, because the operator's
// passes over one release, and a plan of two releases, parse mostly the
// same files; the objects it hands out are shared, so they are read-only.
// A file it does not hold is parsed: a YAML file is cut at its "---"
// lines so that every document knows the line it starts at; a JSON file
// is one document. Each document first goes to a fast reader (fastyaml.go)
// for the block-style YAML that generated manifests are written in; it
// builds the object library-go's path would, and gives up on anything it
// is not sure of. Those documents take the strict library-go path
// (parseDocument): sigs.k8s.io/yaml's strict conversion, which refuses a
// key set twice, a refusal of YAML merge keys, then library-go's Manifest
// parser. Either way the same documents are accepted with the same
// errors, and apiVersion, kind, metadata.name and metadata.namespace must
// be strings. Templates in manifests/ are not rendered (the release image
// they need is unknown offline), so such a file is a parse error.
//
// Duplicates follow the CVO: one object twice in a file is an error, as
// library-go's ParseManifests makes it; the same object in two files is a
// warning (duplicate-object), because the CVO parses file by file and real
// payloads have shipped such pairs.
//
// Filtering: Filter applies the CVO's inclusion filters in its order
// (exclude, feature set, feature gate, major version, profile,
// capabilities, overrides), using library-go's Manifest.Include for all
// but the feature-gate and major-version filters. It works from every
// manifest a release holds, kept or skipped, so the operator can filter a
// loaded release again with a ClusterVersion's capabilities and overrides.
//
// Validating: Lint runs the rules (see Rule and docs/annotations.md) and
// returns findings; Load is LoadAll, Filter and Lint, and rejects the
// payload as a whole with a *ValidationError when any finding is an error.
package payload
