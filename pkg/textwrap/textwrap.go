// Package textwrap fits text to a space: it fills text into indented lines
// for a terminal, and clips text to a byte budget without breaking UTF-8.
package textwrap

import "strings"

// Wrap breaks text into lines of at most width columns, each indented; a
// word longer than a line gets a line of its own. There is no final newline.
func Wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}
