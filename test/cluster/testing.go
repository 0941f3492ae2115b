package cluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnvKeep, when set to a non-empty value, keeps the data directory of the
// cluster RunTests starts even when every test passes.
const EnvKeep = "PAYLOAD_APPLIER_KEEP_CLUSTER"

// binaryBuildTimeout bounds a first build of the control plane binaries.
const binaryBuildTimeout = 30 * time.Minute

// RunTests is a TestMain body: it builds the binaries if needed, starts a
// control plane with opts, stores it in *c, runs the tests, and stops it. It
// returns the exit code for os.Exit:
//
//	var testCluster *cluster.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(cluster.RunTests(m, cluster.Options{}, &testCluster))
//	}
//
// When a test fails, the data directory (component logs, audit log) is kept
// and its path printed. SIGINT and SIGTERM stop the control plane before the
// test binary exits; if the binary is killed outright, Linux's parent-death
// signal kills the processes instead.
func RunTests(m *testing.M, opts Options, c **Cluster) int {
	started := time.Now()
	buildCtx, cancel := context.WithTimeout(context.Background(), binaryBuildTimeout)
	defer cancel()
	if opts.BinDir == "" {
		dir, err := EnsureBinaries(buildCtx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
			return 1
		}
		opts.BinDir = dir
	}
	opts.KeepDataDir = true // decided below, once the result is known
	cl, err := Start(buildCtx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: start the control plane: %v\n", err)
		return 1
	}
	*c = cl
	fmt.Println(cl.Describe(time.Since(started)))

	stopSignals := StopOnSignal(cl)
	code := m.Run()
	stopSignals()

	if err := cl.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: stop: %v\n", err)
	}
	if code != 0 || os.Getenv(EnvKeep) != "" {
		fmt.Printf("cluster: kept control plane data (logs in %s, audit log %s)\n", cl.LogDir(), cl.AuditLogPath())
	} else if err := os.RemoveAll(cl.DataDir()); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: remove %s: %v\n", cl.DataDir(), err)
	}
	return code
}

// Describe is a one-line summary saying that a real control plane runs,
// with component versions and addresses.
func (c *Cluster) Describe(startup time.Duration) string {
	v := c.Versions()
	return fmt.Sprintf("cluster: real control plane started in %s: etcd %s at %s, kube-apiserver %s at %s, kube-controller-manager %s (healthz %s/healthz); KUBECONFIG=%s",
		startup.Round(100*time.Millisecond), v.Etcd, c.etcdURL, v.KubeAPIServer, c.host, v.KubeControllerManager, c.kcmURL, c.kubeconfig)
}

// StopOnSignal stops c and exits with status 1 when the process receives
// SIGINT or SIGTERM. The returned function stops listening.
func StopOnSignal(c *Cluster) (cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "cluster: %v received; stopping the control plane\n", sig)
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "cluster: stop: %v\n", err)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

var nonNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// CreateNamespace creates a namespace named after the test with a random
// suffix (generateName) and deletes it when the test ends. It does not wait
// for the deletion to finish.
func (c *Cluster) CreateNamespace(t testing.TB) string {
	t.Helper()
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	prefix := nonNameChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	prefix = strings.Trim(prefix, "-") + "-"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{"payload-applier.io/test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create test namespace: %v", err)
	}
	t.Cleanup(func() {
		// The test's context may be gone by now; cleanup gets its own.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete test namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
