package textwrap

import (
	"strconv"
	"unicode/utf8"
)

// Clip is s cut to at most n bytes, on a rune boundary so that the text
// stays valid UTF-8.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Bound is s cut through Clip to at most n bytes, ending with a marker
// that says how many bytes were cut, for text written to the cluster: a
// reader must see that the text is not whole. s is returned as it is when
// it fits. n should leave room for the marker (about 25 bytes); below
// that, s is only clipped.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// The marker names len(s)-kept, which is at most len(s): sizing it
	// for len(s) leaves room for the final one.
	room := n - len(cutMarker(len(s)))
	if room < 0 {
		return Clip(s, n)
	}
	kept := Clip(s, room)
	return kept + cutMarker(len(s)-len(kept))
}

func cutMarker(cut int) string {
	return " … (" + strconv.Itoa(cut) + " bytes cut)"
}
