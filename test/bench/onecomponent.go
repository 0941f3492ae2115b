package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// One-component measurements: a component's manifests run in waves, so
// these show whether a large component still applies one manifest at a
// time.
const (
	mOneCM    = "one-component-cm-install"
	mOneMixed = "one-component-mixed-install"
	// deploymentEvery puts a Deployment, a barrier, at every 100th place
	// of the mixed one-component payload.
	deploymentEvery = 100
)

// oneComponentConfigMaps is n ConfigMaps in namespace ns, all in one
// component and one file.
func oneComponentConfigMaps(name, ns string, n int) *workload {
	w := &workload{name: name, namespaces: []string{ns}}
	f := payloadFile{name: "0000_50_bench-one_00_configmaps.yaml"}
	for i := range n {
		f.objects = append(f.objects, len(w.objects))
		w.objects = append(w.objects, configMap(ns, fmt.Sprintf("bench-one-%04d", i), i))
	}
	w.files = append(w.files, f)
	return w
}

// oneComponentMixed is n manifests in one component: its namespace first,
// then the mixed kinds in turn, with a Deployment (no replicas, so nothing
// needs to run) at every deploymentEvery-th place, each a barrier.
func oneComponentMixed(name, ns string, n int) *workload {
	w := &workload{name: name}
	f := payloadFile{name: "0000_50_bench-onemix_00_all.yaml", objects: []int{0}}
	w.objects = append(w.objects, namespaceObject(ns))
	for i := 1; i < n; i++ {
		f.objects = append(f.objects, len(w.objects))
		if i%deploymentEvery == 0 {
			w.objects = append(w.objects, deployment(ns, fmt.Sprintf("deployment-%04d", i)))
			continue
		}
		kind := mixedKinds[i%len(mixedKinds)]
		w.objects = append(w.objects, mixedObject(kind, ns, fmt.Sprintf("%s-%04d", shortKind(kind), i), i))
	}
	w.files = append(w.files, f)
	return w
}

func shortKind(kind string) string {
	return map[string]string{"ConfigMap": "cm", "Secret": "secret", "ServiceAccount": "sa", "Service": "svc", "Role": "role", "RoleBinding": "rb"}[kind]
}

// deployment has no replicas: the bench's control plane runs no pods.
func deployment(ns, name string) *unstructured.Unstructured {
	u := object("apps/v1", "Deployment", ns, name)
	labels := map[string]interface{}{"app": name}
	u.Object["spec"] = map[string]interface{}{
		"replicas": int64(0),
		"selector": map[string]interface{}{"matchLabels": labels},
		"template": map[string]interface{}{
			"metadata": map[string]interface{}{"labels": labels},
			"spec": map[string]interface{}{"containers": []interface{}{
				map[string]interface{}{"name": "main", "image": "registry.invalid/bench:latest"},
			}},
		},
	}
	return u
}

// oneComponent installs each one-component workload with each tool.
func (b *bench) oneComponent(ctx context.Context, tools []tool) error {
	n := b.o.cmCount
	for rep := 1; rep <= b.o.reps; rep++ {
		for i := range tools {
			t := tools[(i+rep-1)%len(tools)]
			if lim, ok := t.(limited); ok && rep > lim.maxReps() {
				continue
			}
			if t.name() == toolRawApply {
				continue
			}
			short := shortName(t.name())
			for _, w := range []*workload{
				oneComponentConfigMaps(fmt.Sprintf("onecm-%s-%d", short, rep), fmt.Sprintf("bench-onecm-%s-%d", short, rep), n),
				oneComponentMixed(fmt.Sprintf("onemix-%s-%d", short, rep), fmt.Sprintf("bench-onemix-%s-%d", short, rep), n),
			} {
				id := mOneCM
				if len(w.namespaces) == 0 {
					id = mOneMixed
				}
				if err := w.write(b.work); err != nil {
					return err
				}
				if err := b.e.createNamespaces(ctx, w.namespaces); err != nil {
					return err
				}
				b.step(ctx, id, t, func(ctx context.Context) error { return t.install(ctx, w) }, func(ctx context.Context) error {
					got, err := b.e.countPresent(ctx, w.objects)
					if err == nil && got != len(w.objects) {
						err = fmt.Errorf("%d of %d objects present", got, len(w.objects))
					}
					return err
				})
				if err := b.e.deleteNamespaces(ctx, w); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
