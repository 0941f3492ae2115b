package payload

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

const smallConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"

// loadWithin loads dir, failing the test if the loader does not return
// within a minute: a hang is the bug some cases guard against.
func loadWithin(t *testing.T, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(dir, DefaultLoadOptions())
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the loader hangs")
		return nil
	}
}

func TestTheLoaderReadsOnlyRegularFilesInsideThePayload(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte(smallConfigMap), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		prepare func(t *testing.T, dir string)
		want    string
	}{
		"release-metadata pointing at /dev/zero": {func(t *testing.T, dir string) {
			replaceWithSymlink(t, filepath.Join(dir, "release-metadata"), "/dev/zero")
		}, "release-metadata: cannot be read inside the payload"},
		"a FIFO named like a manifest": {func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "0000_50_a_01_x.yaml"), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, "0000_50_a_01_x.yaml: not a regular file"},
		"a symlink out of the payload": {func(t *testing.T, dir string) {
			if err := os.Symlink(outside, filepath.Join(dir, "0000_50_a_01_x.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "0000_50_a_01_x.yaml: cannot be read inside the payload"},
		"a file over the limit": {func(t *testing.T, dir string) {
			big := smallConfigMap + "data:\n  k: " + strings.Repeat("x", MaxFileBytes) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "0000_50_a_01_x.yaml"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "more than the 8 MiB a payload file may hold"},
		"a document over etcd's limit": {func(t *testing.T, dir string) {
			big := smallConfigMap + "data:\n  k: " + strings.Repeat("x", MaxObjectBytes) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "0000_50_a_01_x.yaml"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "more than the 1.5 MiB that etcd stores in one object"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{"0000_50_a_00_a.yaml": smallConfigMap})
			tc.prepare(t, dir)
			err := loadWithin(t, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestASymlinkInsideThePayloadIsRead(t *testing.T) {
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{"0000_50_a_00_a.yaml": smallConfigMap})
	if err := os.Symlink("0000_50_a_00_a.yaml", filepath.Join(dir, "0000_50_b_00_a.yaml")); err != nil {
		t.Fatal(err)
	}
	all, _, err := LoadAll(dir)
	if err != nil || len(all.Manifests) != 2 {
		t.Fatalf("got %v, %v; want both files read", all, err)
	}
}

func replaceWithSymlink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
