// Package recordstoretest helps test stores of records in ConfigMaps: a
// fake clientset whose Updates can be made to conflict, hostile data, and
// a measure of what a call allocates.
package recordstoretest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// ConflictNextUpdates makes the next n Updates of a ConfigMap fail with a
// Conflict, as the apiserver answers a write from a stale resourceVersion.
func ConflictNextUpdates(kube *kubefake.Clientset, n int) {
	kube.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, kruntime.Object, error) {
		if n == 0 {
			return false, nil, nil
		}
		n--
		name := a.(clienttesting.UpdateAction).GetObject().(interface{ GetName() string }).GetName()
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("stale"))
	})
}

// Verbs lists the verbs of actions, in order.
func Verbs(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb())
	}
	return out
}

// Gzip returns head, then body n times, then tail, gzipped: a few KiB
// can hold many MiB.
func Gzip(t testing.TB, head, body string, n int, tail string) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, head)
	if body != "" {
		// Whole chunks of body keep the writes few.
		per := max(1, (64<<10)/len(body))
		chunk := strings.Repeat(body, per)
		for left := n; left > 0; left -= per {
			io.WriteString(zw, chunk[:len(body)*min(left, per)])
		}
	}
	io.WriteString(zw, tail)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// EmptyRecordsGzip returns a gzipped JSON list of n empty objects: 16 KiB
// hold 5.6 M of them.
func EmptyRecordsGzip(t testing.TB, n int) []byte {
	t.Helper()
	if n == 0 {
		return Gzip(t, "[]", "", 0, "")
	}
	return Gzip(t, "[", "{},", n-1, "{}]")
}

// AllocatedBytes returns how many bytes the heap allocated while f ran.
func AllocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
