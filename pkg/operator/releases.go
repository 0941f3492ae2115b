package operator

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReleaseSource finds a release's payload directory by version.
type ReleaseSource interface {
	// Dir returns the payload directory of version.
	Dir(version string) (string, error)
	// Versions lists the versions the source holds, for messages.
	Versions() []string
}

// DirStore is a directory with one payload sub-directory per release. A
// sub-directory is found by its name or, failing that, by the version its
// release-metadata declares.
type DirStore struct {
	Root string

	mu       sync.Mutex
	versions map[string]string
}

// Dir implements ReleaseSource.
func (s *DirStore) Dir(version string) (string, error) {
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
	return "", fmt.Errorf("release %s is not in the release store %s (it holds: %v)", version, s.Root, s.versionsLocked())
}

// Versions implements ReleaseSource.
func (s *DirStore) Versions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.scanLocked()
	return s.versionsLocked()
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

// SingleRelease is a source of one payload directory, for `apply`.
type SingleRelease struct {
	Version string
	Path    string
}

// Dir implements ReleaseSource.
func (s SingleRelease) Dir(version string) (string, error) {
	if version != s.Version {
		return "", fmt.Errorf("release %s is not available: only %s (%s) was given", version, s.Version, s.Path)
	}
	return s.Path, nil
}

// Versions implements ReleaseSource.
func (s SingleRelease) Versions() []string { return []string{s.Version} }
