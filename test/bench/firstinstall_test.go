package main

import (
	"testing"
)

// The raw child reads back exactly what the workload wrote, in order.
func TestTheRawChildReadsTheWorkloadAsWritten(t *testing.T) {
	w := firstInstallWorkload(5)
	if err := w.write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(w.flatDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(w.objects) {
		t.Fatalf("%d objects read, want %d", len(objs), len(w.objects))
	}
	for i, obj := range objs {
		if obj.GetKind() != w.objects[i].GetKind() || obj.GetName() != w.objects[i].GetName() {
			t.Errorf("object %d: %s %s, want %s %s", i, obj.GetKind(), obj.GetName(), w.objects[i].GetKind(), w.objects[i].GetName())
		}
	}
	if objs[0].GetKind() != "Namespace" {
		t.Errorf("first object %s, want the Namespace", objs[0].GetKind())
	}
}
