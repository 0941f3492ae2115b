package textwrap

import "testing"

func TestWrap(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", "  "},
		{"one two three", "  one two\n  three"},
		{"one two", "  one two"},
		{"aaaa bbbb cccc dddd", "  aaaa bbbb\n  cccc dddd"},
		{"averyveryverylongword x", "  averyveryverylongword\n  x"},
	}
	for _, tt := range tests {
		if got := Wrap(tt.text, 12, "  "); got != tt.want {
			t.Errorf("Wrap(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
