package payload

import "testing"

func TestDropSourceLeavesFindingsAtTheirDocument(t *testing.T) {
	m := &Manifest{Line: 10, src: []byte("kind: ConfigMap\nmetadata:\n  name: x\n"), srcLine: 10}
	skipped := &Manifest{src: []byte("kind: Secret\n")}
	r := &Release{Manifests: []*Manifest{m}, Skipped: []Skipped{{Manifest: skipped}}}
	if f := atKey(r, m, "name", "some-rule", SeverityWarning, "x"); f.Line != 12 || f.Column != 3 {
		t.Fatalf("before: finding at %d:%d, want 12:3", f.Line, f.Column)
	}
	r.DropSource()
	if m.src != nil || skipped.src != nil {
		t.Error("the text of a kept or a skipped manifest survived DropSource")
	}
	if f := atKey(r, m, "name", "some-rule", SeverityWarning, "x"); f.Line != 10 || f.Column != 1 {
		t.Errorf("after: finding at %d:%d, want the document's start 10:1", f.Line, f.Column)
	}
}
