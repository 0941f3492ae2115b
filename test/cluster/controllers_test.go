package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// controllerTimeout bounds waits on kube-controller-manager. The garbage
// collector needs a few seconds to notice new objects; the namespace
// controller acts within a second or two.
const controllerTimeout = 60 * time.Second

func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// waitGone polls get until it returns NotFound.
func waitGone(ctx context.Context, t *testing.T, what string, get func(context.Context) error) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, controllerTimeout, true, func(ctx context.Context) (bool, error) {
		lastErr = get(ctx)
		if apierrors.IsNotFound(lastErr) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s still present after %s (last get: %v)", what, controllerTimeout, lastErr)
	}
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
}

func TestNamespaceDeletionRemovesItsContents(t *testing.T) {
	ctx := t.Context()
	client := adminClient(t)
	ns := testCluster.CreateNamespace(t)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("inside"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Only the namespace controller empties a namespace and removes the
	// kubernetes finalizer; without it the namespace stays Terminating.
	waitGone(ctx, t, "namespace "+ns, func(ctx context.Context) error {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "inside", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap/%s/inside after namespace deletion: got err %v, want NotFound", ns, err)
	}
}

func TestGarbageCollectorDeletesDependentsOfDeletedOwner(t *testing.T) {
	ctx := t.Context()
	client := adminClient(t)
	ns := testCluster.CreateNamespace(t)
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := configMap("dependent")
	dependent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Orphan-free background deletion: the apiserver removes the owner at
	// once and leaves the dependent to the garbage collector.
	background := metav1.DeletePropagationBackground
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "dependent ConfigMap", func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return err
	})
}

func TestFinalizerHoldsObjectTerminatingUntilRemoved(t *testing.T) {
	ctx := t.Context()
	client := adminClient(t)
	ns := testCluster.CreateNamespace(t)
	const finalizer = "payload-applier.io/test-hold"
	cm := configMap("held")
	cm.Finalizers = []string{finalizer}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	held, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object with a finalizer vanished on delete: %v", err)
	}
	if held.DeletionTimestamp == nil {
		t.Fatal("deleted object with a finalizer has no deletionTimestamp")
	}
	// The apiserver, not a controller, keeps the object: it deletes only
	// once metadata.finalizers is empty.
	if len(held.Finalizers) != 1 || held.Finalizers[0] != finalizer {
		t.Fatalf("finalizers = %v, want [%s]", held.Finalizers, finalizer)
	}

	held.Finalizers = nil
	if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove finalizer: %v", err)
	}
	waitGone(ctx, t, "ConfigMap held", func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		return err
	})
}
