package operator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReleaseSource provides the operator's releases by version. The operator
// loads each version once and keeps it.
type ReleaseSource interface {
	// Load returns the validated release of version, its manifests filtered
	// by opts. The operator checks that it declares version.
	Load(version string, opts payload.LoadOptions) (*payload.Release, error)
}

// ErrNotInStore is why a ReleaseSource has no release of a version: the
// operator then looks for its image in the update graph.
var ErrNotInStore = errors.New("not in the release store")

// DirStore is a directory with one payload sub-directory per release. A
// sub-directory is found by its name or, failing that, by the version its
// release-metadata declares.
type DirStore struct {
	Root string

	mu       sync.Mutex
	versions map[string]string
}

// Load implements ReleaseSource: it reads and validates the payload
// directory of version.
func (s *DirStore) Load(version string, opts payload.LoadOptions) (*payload.Release, error) {
	dir, err := s.dir(version)
	if err != nil {
		return nil, err
	}
	return payload.Load(dir, opts)
}

// dir returns the payload directory of version.
func (s *DirStore) dir(version string) (string, error) {
	if s.Root == "" {
		// An operator that reads releases by image only.
		return "", fmt.Errorf("release %s is %w: no release store is configured", version, ErrNotInStore)
	}
	if dir := filepath.Join(s.Root, version); isDir(dir) {
		return dir, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.scanLocked(); err != nil {
		return "", err
	}
	if dir, ok := s.versions[version]; ok {
		return dir, nil
	}
	return "", fmt.Errorf("release %s is %w %s (it holds: %v)", version, ErrNotInStore, s.Root, s.versionsLocked())
}

func (s *DirStore) versionsLocked() []string {
	out := make([]string, 0, len(s.versions))
	for v := range s.versions {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// scanLocked reads every sub-directory's release. It runs again each time a
// version is missing, so releases added while the operator runs are found.
func (s *DirStore) scanLocked() error {
	entries, err := os.ReadDir(s.Root)
	if err != nil {
		return fmt.Errorf("read release store: %w", err)
	}
	s.versions = map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(s.Root, e.Name())
		if rel, _, err := payload.LoadAll(dir); err == nil && rel.Version != "" {
			s.versions[rel.Version] = dir
		}
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// LoadedRelease is a source of one release the caller has already loaded
// and validated, so that `apply` reads its payload once. Load returns it as
// it is, whatever the options: they are the filters it was loaded with, and
// the operator filters it again for each ClusterVersion. The operator then
// owns the release: it makes Dir absolute and drops the source text.
type LoadedRelease struct {
	Release *payload.Release
	// Image is the pull spec by digest the release was read from, for
	// status.desired.image; "" for a directory.
	Image string
}

// ImageOf implements releaseImager.
func (s LoadedRelease) ImageOf(version string) string {
	if version != s.Release.Version {
		return ""
	}
	return s.Image
}

// releaseImager is a ReleaseSource that knows the image a release it
// loads came from.
type releaseImager interface {
	ImageOf(version string) string
}

// Load implements ReleaseSource.
func (s LoadedRelease) Load(version string, _ payload.LoadOptions) (*payload.Release, error) {
	if version != s.Release.Version {
		return nil, fmt.Errorf("release %s is not available: only %s (%s) was given", version, s.Release.Version, s.Release.Dir)
	}
	return s.Release, nil
}
