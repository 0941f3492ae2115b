#!/bin/sh
# Runs payload-applier's load + filter + graph and the CVO's LoadUpdate +
# task graph on the same payload, one after the other, in one run.
#
#   PAYLOAD   payload directory (default ../shared/payloads/ocp-real)
#   CVO_GIT   a clone of openshift/cluster-version-operator holding commit
#             CVO_COMMIT (default: cloned from GitHub into a temporary dir)
#   BENCHFLAGS extra go test flags (default -benchtime 10x -count 3 -cpu 1,2)
#
# The CVO's module does not resolve through the module proxy (403 for its
# pseudo-versions), so its source is taken from git at CVO_COMMIT and built
# with its own vendor/ directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
payload=$(cd "${PAYLOAD:-$root/../shared/payloads/ocp-real}" && pwd)
commit=${CVO_COMMIT:-9f2389988d2d}
flags=${BENCHFLAGS:--benchtime 10x -count 3 -cpu 1,2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git=${CVO_GIT:-}
if [ -z "$git" ]; then
	git clone -q --filter=blob:none https://github.com/openshift/cluster-version-operator "$tmp/cvo.git"
	git=$tmp/cvo.git
fi
mkdir "$tmp/cvo"
git -C "$git" archive "$commit" | tar -x -C "$tmp/cvo"
cp "$here/cvo/loadupdate_bench_test.go" "$tmp/cvo/pkg/payload/"

# The CVO wants manifests/ beside release-manifests/.
mkdir -p "$tmp/payload/manifests"
if [ -d "$payload/release-manifests" ]; then
	ln -s "$payload/release-manifests" "$tmp/payload/release-manifests"
else
	ln -s "$payload" "$tmp/payload/release-manifests"
fi

echo "payload: $payload; CVO commit $commit"
(cd "$here" && PAYLOAD=$payload go test -run '^$' -bench LoadFilterGraph -benchmem $flags .)
(cd "$tmp/cvo" && CVO_PAYLOAD=$tmp/payload go test -mod=vendor -tags cvobench_cvo -run '^$' -bench CVOLoadUpdateGraph -benchmem $flags ./pkg/payload/)
