#!/bin/sh
# Builds the real cluster-version-operator for side-by-side benchmarks and
# prints the binary's path. Its module does not resolve through the module
# proxy, so the source comes from git at CVO_COMMIT and builds with its own
# vendor/ directory; a build of the same commit is reused.
#
#   CVO_GIT     a clone of openshift/cluster-version-operator holding
#               CVO_COMMIT (default: cloned from GitHub into a temporary dir)
#   CVO_COMMIT  default 6e719331fb5863141397f35b1f47bed42148a6dd
set -eu
commit=${CVO_COMMIT:-6e719331fb5863141397f35b1f47bed42148a6dd}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/payload-applier/bin
out=$cache/cluster-version-operator-$commit
if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git=${CVO_GIT:-}
if [ -z "$git" ]; then
	git clone -q --filter=blob:none https://github.com/openshift/cluster-version-operator "$tmp/cvo.git" >&2
	git=$tmp/cvo.git
fi
mkdir -p "$tmp/src" "$cache"
git --git-dir="$git/.git" rev-parse --git-dir >/dev/null 2>&1 && git="$git/.git"
git --git-dir="$git" archive "$commit" | tar -x -C "$tmp/src"
echo "building the cluster-version-operator at $commit (a few minutes)" >&2
(cd "$tmp/src" && go build -mod=vendor -o "$out.tmp" ./cmd/cluster-version-operator)
mv "$out.tmp" "$out"
echo "$out"
