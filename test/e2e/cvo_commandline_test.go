package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  gosync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStartTakesTheCVOsCommandLine: `start` with the CVO's arguments and
// environment, on a cluster that requests no release, installs the release
// it ships in from $PAYLOAD_OVERRIDE (release-manifests/), its own
// manifests/ rendered with --release-image and $CLUSTER_PROFILE, with the
// capabilities --always-enable-capabilities names, and logs each pass at
// --v=2.
func TestStartTakesTheCVOsCommandLine(t *testing.T) {
	bin, c, ns := newCLITest(t)
	root := t.TempDir()
	release := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x"),
		"0000_50_demo_01_ingress.yaml": configMap(ns, "ingress", "x", `capability.openshift.io/name: Ingress`)})
	if err := os.Rename(release, filepath.Join(root, "release-manifests")); err != nil {
		t.Fatal(err)
	}
	own := strings.TrimLeft(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: operator
  namespace: `+ns+`
  annotations:
    `+include+`
data:
  image: '{{.ReleaseImage}}'
  profile: '{{.ClusterProfile}}'
`, "\n")
	if err := os.MkdirAll(filepath.Join(root, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "manifests", "0000_00_cluster-version-operator_30_deployment.yaml"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "quay.example.com/ocp/release@sha256:" + strings.Repeat("5", 64)
	// The installer's ClusterVersion: no release requested, no capability
	// asked for but those --always-enable-capabilities names.
	if _, err := configClient(t).ConfigV1().ClusterVersions().Create(context.Background(), &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "6d4b4f3e-3a8e-4b35-9d4a-8a1b8f0e2c11",
			Capabilities: &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "start", "--release-image="+image, "--enable-auto-update=false", "--listen=", "--v=2", "--always-enable-capabilities=Ingress",
		"--leader-elect=false", "--resync-interval=1s", "--liveness-window=2s", "--kubeconfig", testCluster.ApplierKubeconfig())
	cmd.Env = append(os.Environ(), "PAYLOAD_OVERRIDE="+root, "NODE_NAME=master-0", "CLUSTER_PROFILE=self-managed-high-availability")
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	var cv *configv1.ClusterVersion
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := configClient(t).ConfigV1().ClusterVersions().Get(ctx, "version", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cv = got
		return len(got.Status.History) > 0 && got.Status.History[0].State == configv1.CompletedUpdate, nil
	}); err != nil {
		t.Fatalf("no completed install: %+v\n%s", cv, log.String())
	}
	if d := cv.Status.Desired; d.Version != "1.0.0" || d.Image != image || cv.Spec.DesiredUpdate != nil {
		t.Errorf("desired %s %s, spec.desiredUpdate %+v: want 1.0.0 by the image it ships in, nothing requested", d.Version, d.Image, cv.Spec.DesiredUpdate)
	}
	rendered, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rendered.Data["image"] != image || rendered.Data["profile"] != "self-managed-high-availability" {
		t.Errorf("the operator's own manifest applied as %v, want it rendered", rendered.Data)
	}
	for _, name := range []string{"a", "ingress"} {
		if _, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("release-manifests/ not applied: %v", err)
		}
	}
	if caps := cv.Status.Capabilities.EnabledCapabilities; len(caps) != 1 || caps[0] != configv1.ClusterVersionCapabilityIngress {
		t.Errorf("enabled capabilities %v, want Ingress alone, as --always-enable-capabilities names it", caps)
	}
	if !strings.Contains(log.String(), `"Pass ended" version="1.0.0"`) {
		t.Errorf("--v=2 logged no pass:\n%s", log.String())
	}
}

// TestStartRefusesWhatItCannotDo: the CVO's flags it does not support, and
// a --release-image without a release at $PAYLOAD_OVERRIDE, are usage
// errors that say why.
func TestStartRefusesWhatItCannotDo(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--enable-auto-update=true"}, "--enable-auto-update=true is not supported"},
		{[]string{"--release-image=quay.example.com/ocp/release@sha256:" + strings.Repeat("5", 64)}, "$PAYLOAD_OVERRIDE"},
		{[]string{"--release-image=not a reference"}, "--release-image"},
	} {
		cmd := exec.Command(bin, append([]string{"start", "--kubeconfig", testCluster.ApplierKubeconfig()}, tc.args...)...)
		cmd.Env = append(os.Environ(), "PAYLOAD_OVERRIDE="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("start %v: %v\n%s\nwant exit 2 saying %q", tc.args, err, out, tc.want)
		}
	}
}
