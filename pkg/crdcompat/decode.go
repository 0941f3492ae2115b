package crdcompat

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Decode reads a CustomResourceDefinition written as apiextensions.k8s.io
// v1 or v1beta1 and returns it as v1, with the apiserver's defaults: a
// v1beta1 spec.version and spec.validation become per-version entries.
func Decode(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	switch apiVersion {
	case apiextensionsv1.SchemeGroupVersion.String():
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, crd); err != nil {
			return nil, fmt.Errorf("read CustomResourceDefinition: %w", err)
		}
		scheme.Default(crd)
		return crd, nil
	case apiextensionsv1beta1.SchemeGroupVersion.String():
		old := &apiextensionsv1beta1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, old); err != nil {
			return nil, fmt.Errorf("read CustomResourceDefinition: %w", err)
		}
		scheme.Default(old)
		internal := &apiextensions.CustomResourceDefinition{}
		if err := scheme.Convert(old, internal, nil); err != nil {
			return nil, fmt.Errorf("convert CustomResourceDefinition from v1beta1: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := scheme.Convert(internal, crd, nil); err != nil {
			return nil, fmt.Errorf("convert CustomResourceDefinition to v1: %w", err)
		}
		return crd, nil
	default:
		return nil, fmt.Errorf("apiVersion %q is not a CustomResourceDefinition version this applier reads (apiextensions.k8s.io/v1 or v1beta1)", apiVersion)
	}
}
