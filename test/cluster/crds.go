package cluster

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/manifests"
)

// fieldManager owns what the harness writes with server-side apply.
const fieldManager = "payload-applier-test-cluster"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

//go:embed fixtures/*.yaml
var fixtureFiles embed.FS

// FixtureCRDs returns minimal CRDs for API groups that OpenShift serves
// through aggregated API servers or add-ons and that real payloads use
// without defining them (see docs/testing.md for the list and reasons).
// Their schemas accept any fields.
func FixtureCRDs() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(fixtureFiles, "fixtures/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		raw, err := fixtureFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			return nil, fmt.Errorf("parse fixture %s: %w", path.Base(name), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// startupCRDs are the CRDs Start installs: the operator's own, then the fixtures.
func startupCRDs() ([]*unstructured.Unstructured, error) {
	own, err := manifests.CRDs()
	if err != nil {
		return nil, err
	}
	fixtures, err := FixtureCRDs()
	if err != nil {
		return nil, err
	}
	return append(own, fixtures...), nil
}

// ApplyCRDs server-side applies each CustomResourceDefinition (forcing
// ownership of conflicting fields) and waits until every one is Established
// and its resources are listed by discovery, so that a RESTMapper built
// afterwards resolves their kinds. ctx bounds the whole wait.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, crds []*unstructured.Unstructured) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crdClient := client.Resource(crdResource)
	force := true
	for _, crd := range crds {
		data, err := json.Marshal(crd.Object)
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition/%s encode: %w", crd.GetName(), err)
		}
		if _, err := crdClient.Patch(ctx, crd.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("CustomResourceDefinition/%s apply failed: %w", crd.GetName(), err)
		}
	}

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		name := crd.GetName()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			live, err := crdClient.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return crdEstablished(live) && crdDiscovered(dc, live), nil
		})
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition/%s not Established and discoverable: %w", name, err)
		}
	}
	return nil
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		cond, ok := c.(map[string]interface{})
		if ok && cond["type"] == "Established" && cond["status"] == "True" {
			return true
		}
	}
	return false
}

// crdDiscovered reports whether discovery lists the CRD's plural in every
// served version.
func crdDiscovered(dc discovery.DiscoveryInterface, crd *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, ok := v.(map[string]interface{})
		if !ok || version["served"] != true {
			continue
		}
		name, _ := version["name"].(string)
		list, err := dc.ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil {
			return false
		}
		found := false
		for _, r := range list.APIResources {
			if r.Name == plural {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
