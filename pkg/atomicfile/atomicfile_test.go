package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWithModeAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("new"), 0o440); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want new", got, err)
	}
	if st, _ := os.Stat(name); st.Mode().Perm() != 0o440 {
		t.Errorf("mode %v, want 0440", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want the file alone", len(entries))
	}
}

func TestWriteIntoAMissingDirectoryFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "absent", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("want an error for a missing directory")
	}
}
