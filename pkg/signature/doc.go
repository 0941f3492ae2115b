// Package signature verifies release images by digest as the
// cluster-version operator does, and signs them so that it can.
//
// Verifying: FromRelease reads the verification ConfigMap of a release
// (annotated release.openshift.io/verification-config-map): every
// verifier-public-key-* keyring must have signed a digest, and the store-*
// URLs are where its signatures live. As in the CVO, the verifier is the one
// of the release the cluster runs, and it judges the target of an update.
// Verify looks for signatures first in the cluster's ConfigMaps in
// openshift-config-managed labelled release.openshift.io/verification-signatures,
// then in the stores, <store>/sha256=<hex>/signature-N; the ClusterVersion's
// spec.signatureStores, when set, replace the release's stores. The
// keyrings, the stores and the check of each signature are library-go's
// pkg/verify; this package puts them in the CVO's order, bounds what a
// store can make it read or wait for (Limits), and refuses a signature
// made outside its key's lifetime, which library-go does not check.
//
// Signing: Sign writes the atomic container signature of a digest as an
// OpenPGP message, and AddToConfigMap, WriteToStore and
// AddToVerifierConfigMap put signatures and public keys where Verify
// finds them.
package signature
