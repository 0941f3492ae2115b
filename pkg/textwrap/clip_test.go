package textwrap

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	if got := Bound("short", 10); got != "short" {
		t.Errorf("a string that fits is kept whole: %q", got)
	}
	long := strings.Repeat("é", 3<<20) // 6 MiB, two bytes a rune
	for _, n := range []int{100, 101, 8 << 10} {
		got := Bound(long, n)
		if len(got) > n || !utf8.ValidString(got) {
			t.Fatalf("Bound to %d: %d bytes, valid UTF-8 %v", n, len(got), utf8.ValidString(got))
		}
		kept, _, found := strings.Cut(got, " … (")
		if want := " … (" + strconv.Itoa(len(long)-len(kept)) + " bytes cut)"; !found || !strings.HasSuffix(got, want) {
			t.Errorf("Bound to %d gives %q, want it to end %q", n, got, want)
		}
	}
	if got := Bound(long, 5); len(got) > 5 || !utf8.ValidString(got) {
		t.Errorf("a limit below the marker still bounds: %q", got)
	}
}
