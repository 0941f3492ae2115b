package payload

import (
	"regexp"
	"sort"
	"strings"
	"sync"

	openshiftapi "github.com/openshift/api"
	"k8s.io/apimachinery/pkg/runtime"
)

// RuleUnknownField flags a field that the Go type of a built-in or OpenShift
// kind does not declare. The CVO decodes such manifests into typed objects
// and silently loses the field; the applier drops it with a warning Event.
const RuleUnknownField Rule = "unknown-field"

// TypedScheme knows the Go types of Kubernetes and OpenShift APIs, which
// the CVO decodes manifests into. Lint and the apply engine share it.
var TypedScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = openshiftapi.InstallKube(s)
	_ = openshiftapi.Install(s)
	return s
})

var unknownFieldName = regexp.MustCompile(`unknown field "([^"]+)"`)

// checkUnknownFields reports the fields of a typed kind's manifest that its
// type does not declare, such as a misspelled backoffLimit. Delete manifests
// are skipped: only their identity is read.
func checkUnknownFields(r *Release, m *Manifest) []Finding {
	if m.Obj == nil || m.Delete() {
		return nil
	}
	typed, err := TypedScheme().New(m.GVK)
	if err != nil {
		return nil
	}
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m.Obj.Object, typed, true)
	if err == nil {
		return nil
	}
	var fields []string
	for _, match := range unknownFieldName.FindAllStringSubmatch(err.Error(), -1) {
		if f := match[1]; f != "status" && !strings.HasPrefix(f, "status.") {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	sort.Strings(fields)
	return []Finding{at(r, m, RuleUnknownField, SeverityWarning,
		"%s sets %s, which %s %s does not declare; the field is dropped when applied (a misspelled field name?)",
		m.ID(), strings.Join(fields, ", "), m.GVK.GroupVersion(), m.GVK.Kind)}
}
