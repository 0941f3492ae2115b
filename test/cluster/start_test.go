package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binDirWithFakeAPIServer links the real etcd and kube-controller-manager
// next to a kube-apiserver shell script with the given body.
func binDirWithFakeAPIServer(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{etcdBinary, kcmBinary} {
		if err := os.Symlink(filepath.Join(testCluster.binDir, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, apiServerBin), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStartNamesTheLogOfAProcessThatExits(t *testing.T) {
	bin := binDirWithFakeAPIServer(t, "echo 'Error: unknown flag: --frobnicate' >&2\nexit 1\n")
	_, err := Start(t.Context(), Options{BinDir: bin, TempDir: t.TempDir(), StartTimeout: 30 * time.Second})
	if err == nil {
		t.Fatal("Start succeeded with a kube-apiserver that exits at once")
	}
	for _, want := range []string{"kube-apiserver exited", "kube-apiserver.log", "unknown flag: --frobnicate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestStartRetriesWithNewPortsWhenOneIsTaken(t *testing.T) {
	attempts := filepath.Join(t.TempDir(), "attempts")
	bin := binDirWithFakeAPIServer(t, "echo x >> "+attempts+"\necho 'listen tcp 127.0.0.1:6443: bind: address already in use' >&2\nexit 1\n")
	_, err := Start(t.Context(), Options{BinDir: bin, TempDir: t.TempDir(), StartTimeout: 30 * time.Second})
	if err == nil {
		t.Fatal("Start succeeded with a kube-apiserver that cannot bind")
	}
	if !strings.Contains(err.Error(), "port already in use") {
		t.Errorf("error does not say a port was in use:\n%v", err)
	}
	data, readErr := os.ReadFile(attempts)
	if readErr != nil {
		t.Fatal(readErr)
	}
	if n := strings.Count(string(data), "x"); n != 3 {
		t.Errorf("kube-apiserver started %d times, want 3 (one start and two retries)", n)
	}
}

func TestStartRejectsDuplicateUsers(t *testing.T) {
	_, err := Start(t.Context(), Options{BinDir: testCluster.binDir, Users: []User{{Name: AdminUser}}})
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("Start with a user named %q: got %v, want a reserved-name error", AdminUser, err)
	}
}

func TestStartTimesOutOnAProcessThatNeverBecomesReady(t *testing.T) {
	bin := binDirWithFakeAPIServer(t, "echo 'waiting for nothing'\nsleep 300\n")
	_, err := Start(t.Context(), Options{BinDir: bin, TempDir: t.TempDir(), StartTimeout: 2 * time.Second, StopGracePeriod: time.Second})
	if err == nil {
		t.Fatal("Start succeeded with a kube-apiserver that never serves")
	}
	for _, want := range []string{"kube-apiserver not ready", "kube-apiserver.log", "waiting for nothing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
