// Package recordstoretest helps test stores of records in ConfigMaps: a
// fake clientset whose Updates can be made to conflict, hostile data, and
// a measure of what a call allocates.
package recordstoretest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"runtime"
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

// EmptyRecordsGzip returns a gzipped JSON list of n empty objects: a few
// KiB that decode to n records.
func EmptyRecordsGzip(t testing.TB, n int) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("{},"), 4096)
	zw.Write([]byte("["))
	for left := n - 1; left > 0; left -= 4096 {
		zw.Write(chunk[:3*min(left, 4096)])
	}
	zw.Write([]byte("{}]"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
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
