package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// The update phase of the differential check: each operator, having
// installed rel, is asked for next, a z-stream made from rel, and the
// objects of next are dumped once it Completed. No kubelet runs here, so
// the harness plays what would: the Deployment controller (Deployments
// report their replicas available) and, for the CVO, its version- pod,
// which copies the next release into the host directory the CVO reads.

// updateControllers are the controllers the harness plays during updates.
var updateControllers = []string{"deployment-controller", "replicaset-controller"}

// updateConfigMap is the ConfigMap next adds; updateDataKey the key it
// adds to an existing ConfigMap of rel.
const (
	updateConfigMap = "bench-update-added"
	updateDataKey   = "bench-update"
)

// nextRelease writes under dir a release made from rel: the next patch
// version, one ConfigMap added, and one data key added to a ConfigMap rel
// already has, each file of rel otherwise copied.
func nextRelease(rel *payload.Release, dir string) (*payload.Release, error) {
	v, err := version.ParseSemantic(rel.Version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", rel.Version, err)
	}
	next := v.WithPatch(v.Patch() + 1).String()
	src := manifestsDir(rel)
	out := filepath.Join(dir, "release-manifests")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	changed, ns, err := changedConfigMap(rel)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	for _, ent := range entries {
		name := ent.Name()
		switch {
		case name == "release-metadata":
			meta := map[string]interface{}{"kind": "cincinnati-metadata-v0", "version": next, "previous": []string{rel.Version}}
			b, _ := json.Marshal(meta)
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				return nil, err
			}
		case name == "image-references":
			refs := map[string]interface{}{"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
				"metadata": map[string]interface{}{"name": next}, "spec": map[string]interface{}{}}
			b, _ := json.Marshal(refs)
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				return nil, err
			}
		case name == filepath.Base(changed.File):
			// The file again, document by document, with the one change.
			var docs []string
			for _, m := range rel.Manifests {
				if m.File != changed.File {
					continue
				}
				obj := m.Obj.DeepCopy()
				if m == changed {
					_ = unstructured.SetNestedField(obj.Object, "1", "data", updateDataKey)
				}
				b, _ := json.Marshal(obj.Object)
				docs = append(docs, string(b))
			}
			if err := os.WriteFile(filepath.Join(out, name), []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
				return nil, err
			}
		default:
			// Copied: the loader follows no link out of a payload.
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				return nil, err
			}
		}
	}
	added := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n"+
		"    include.release.openshift.io/self-managed-high-availability: \"true\"\ndata:\n  version: %q\n", updateConfigMap, ns, next)
	if err := os.WriteFile(filepath.Join(out, "0000_90_bench-update_00_configmap.yaml"), []byte(added), 0o644); err != nil {
		return nil, err
	}
	return loadReal(dir)
}

// changedConfigMap picks the ConfigMap of rel that next changes: the first
// with data.
func changedConfigMap(rel *payload.Release) (*payload.Manifest, string, error) {
	for _, m := range rel.Manifests {
		if m.GVK.Kind == "ConfigMap" && m.GVK.Group == "" && !m.Delete() && !m.CreateOnly() && m.Obj.GetNamespace() != "" {
			if data, _, _ := unstructured.NestedMap(m.Obj.Object, "data"); len(data) > 0 {
				return m, m.Obj.GetNamespace(), nil
			}
		}
	}
	return nil, "", fmt.Errorf("%s has no ConfigMap with data to change", rel.Version)
}

// playDeployments reports every Deployment rolled out and available, as
// the Deployment controller would with its pods running.
func playDeployments(ctx context.Context, e *env) {
	list, err := e.kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		st := &d.Status
		if st.ObservedGeneration == d.Generation && st.AvailableReplicas == replicas && st.UpdatedReplicas == replicas {
			continue
		}
		st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = d.Generation, replicas, replicas, replicas, replicas
		st.UnavailableReplicas = 0
		now := metav1.Now()
		st.Conditions = []appsv1.DeploymentCondition{
			{Type: "Available", Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: "Progressing", Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		}
		if _, err := e.kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			logf("report Deployment %s/%s available: %v", d.Namespace, d.Name, err)
		}
	}
}

// playVersionPods does the work of the CVO's version- pods: each copies
// the release it was made for into the directory its last container moves
// it to, under /etc/cvo/updatepayloads on the host. The copy here links
// next's manifests there, and the pod is reported Succeeded.
func playVersionPods(ctx context.Context, e *env, next *payload.Release) {
	pods, err := e.kube.CoreV1().Pods(cvoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=retrieve-openshift-release"})
	if err != nil {
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending || len(pod.Spec.Containers) == 0 {
			continue
		}
		cmd := pod.Spec.Containers[0].Command
		if len(cmd) != 3 || cmd[0] != "mv" || !strings.HasPrefix(cmd[2], cvoPayloadsDir+"/") {
			logf("version pod %s: unexpected command %q", pod.Name, cmd)
			continue
		}
		dir := cmd[2]
		if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
			logf("version pod %s: %v", pod.Name, err)
			continue
		}
		if err := os.Symlink(manifestsDir(next), filepath.Join(dir, "release-manifests")); err != nil && !os.IsExist(err) {
			logf("version pod %s: %v", pod.Name, err)
			continue
		}
		pod.Status.Phase = corev1.PodSucceeded
		if _, err := e.kube.CoreV1().Pods(cvoNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			logf("version pod %s: report Succeeded: %v", pod.Name, err)
		}
	}
}

// cvoPayloadsDir is where the CVO's version- pods put releases.
const cvoPayloadsDir = "/etc/cvo/updatepayloads"

// cvoUpdate asks the CVO for next as an admin would with
// `oc adm upgrade --to-image --allow-explicit-upgrade --force`: by an
// image that no signature covers, so forced.
func cvoUpdate(ctx context.Context, e *env, next *payload.Release, work string) error {
	if err := os.RemoveAll(cvoPayloadsDir); err != nil {
		return err
	}
	// The pod runs as this service account, which the CVO's own
	// manifests (not the payload) make.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "update-payload", Namespace: cvoNamespace}}
	if _, err := e.kube.CoreV1().ServiceAccounts(cvoNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// So does its priority class, which OpenShift's payload makes (the
	// examples' does not).
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "openshift-user-critical"}, Value: 1000000000}
	if _, err := e.kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(next.Version)))
	patch := fmt.Sprintf(`{"spec":{"desiredUpdate":{"version":%q,"image":%q,"force":true}}}`, next.Version, "registry.example.com/ocp/release@"+digest)
	_, err := e.dynamic.Resource(clusterVersions).Patch(ctx, "version", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// applierUpdate asks payload-applier for next by version, from its
// release store (applierCommand's).
func applierUpdate(ctx context.Context, e *env, next *payload.Release, work string) error {
	if err := os.Symlink(next.Dir, filepath.Join(work, "store", next.Version)); err != nil && !os.IsExist(err) {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"desiredUpdate":{"version":%q}}}`, next.Version)
	_, err := e.dynamic.Resource(clusterVersions).Patch(ctx, "version", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// updateInOperator asks op for next, plays the operators, Deployments and
// version pods until next Completed, and dumps next's objects into dir.
func updateInOperator(ctx context.Context, e *env, op sideOperator, next *payload.Release, work, dir string) (time.Duration, error) {
	if err := op.update(ctx, e, next, work); err != nil {
		return 0, fmt.Errorf("request the update: %w", err)
	}
	// What the version pods left on this host.
	defer os.RemoveAll(cvoPayloadsDir)
	versions := operatorVersions(next)
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, sideTimeout, true, func(ctx context.Context) (bool, error) {
		playDeployments(ctx, e)
		playVersionPods(ctx, e, next)
		reportAvailable(ctx, e, versions)
		return completedOn(ctx, e, next.Version), nil
	})
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("%s not Completed within %s", next.Version, sideTimeout)
	}
	return took, dumpObjects(ctx, e, next, dir)
}
