package payload

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/openshift/library-go/pkg/manifest"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// This file reads the block-style YAML that generated manifests are written
// in (mappings, sequences, plain and quoted one-line scalars, literal and
// folded block scalars, {} and []) straight into the objects library-go's
// path builds: sigs.k8s.io/yaml's YAML 1.1 reading (go-yaml v2), then the
// unstructured JSON decoder's numbers (int64 or float64). It gives up on
// anything it is not sure of (anchors, aliases, tags, flow collections,
// merge keys, duplicate keys, tabs, multi-line plain or quoted scalars,
// unusual escapes or indentation), and the caller then takes the library-go
// path, so what is accepted and every error stay the same.
// TestFastYAMLMatchesLibraryGo and FuzzFastYAML compare the two.

// fastLine is one line of a document: where its text starts and ends (the
// line break excluded) and how many spaces indent it.
type fastLine struct {
	start, end, indent int
	// blank is a line of spaces only; comment starts with # after spaces.
	blank, comment bool
}

// linePool keeps the line tables of documents read, which live only as
// long as the reading.
var linePool = sync.Pool{New: func() any { return new([]fastLine) }}

type fastReader struct {
	src   string
	lines []fastLine
	i     int
	// failed is set once the reader is unsure; every result is then void.
	failed bool
	memo   map[string]any
	why    string
	// keys interns the mapping keys of the document: a CRD's schema
	// repeats "type" and "description" thousands of times.
	keys map[string]string
}

// readFastYAML reads one document into a JSON-shaped object, or reports
// false when the library-go path must read it.
func readFastYAML(text []byte) (map[string]any, bool) {
	if !fastYAMLCandidate(text) {
		return nil, false
	}
	// The reader works on the text without copying it; the strings it
	// keeps are copied out (own), so the parsed object does not hold the
	// whole file alive: the file's indentation, comments and repeated keys
	// would cost a third more memory for as long as the release is held.
	r := &fastReader{src: unsafe.String(unsafe.SliceData(text), len(text))}
	lines := linePool.Get().(*[]fastLine)
	defer func() {
		*lines = r.lines[:0]
		linePool.Put(lines)
	}()
	r.lines = *lines
	r.splitLines()
	j := r.nextSignificant(0)
	if j == len(r.lines) {
		return nil, false
	}
	l := r.lines[j]
	if r.isSeqItem(j, l.indent) {
		return nil, false
	}
	obj := r.parseMapping(l.indent, j, l.start+l.indent)
	if r.failed || r.nextSignificant(r.i) != len(r.lines) {
		return nil, false
	}
	return obj, true
}

// fastYAMLCandidate refuses text with characters the reader leaves to
// go-yaml: control characters and tabs, the line breaks beyond \n that
// YAML 1.1 knows, a byte-order mark, characters YAML does not allow, and
// "<<" anywhere (merge keys are refused by the strict path, with its
// message).
// candidateCheck marks the bytes fastYAMLCandidate looks at closer.
var candidateCheck = func() (t [256]bool) {
	for c := range 256 {
		t[c] = (c < 0x20 && c != '\n') || c == '<' || c >= 0x7f
	}
	return t
}()

func fastYAMLCandidate(text []byte) bool {
	for i := 0; i < len(text); {
		c := text[i]
		if !candidateCheck[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if c != '<' || (i+1 < len(text) && text[i+1] == '<') {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		case r < 0xa0, r >= 0xd800 && r < 0xe000, r > 0xfffd && r < 0x10000:
			return false
		}
		i += size
	}
	return true
}

func (r *fastReader) splitLines() {
	s := r.src
	r.lines = slices.Grow(r.lines[:0], strings.Count(s, "\n")+1)
	for start := 0; start < len(s); {
		end := len(s)
		if i := strings.IndexByte(s[start:], '\n'); i >= 0 {
			end = start + i
		}
		l := fastLine{start: start, end: end}
		for start+l.indent < end && s[start+l.indent] == ' ' {
			l.indent++
		}
		l.blank = start+l.indent == end
		l.comment = !l.blank && s[start+l.indent] == '#'
		r.lines = append(r.lines, l)
		start = end + 1
	}
}

func (r *fastReader) fail() { r.failed = true }

// nextSignificant returns the first line from j that is neither blank nor
// a comment.
func (r *fastReader) nextSignificant(j int) int {
	for j < len(r.lines) && (r.lines[j].blank || r.lines[j].comment) {
		j++
	}
	return j
}

// nextNonBlank returns the first line from j that is not blank; comments
// count, so that a deeper comment after a scalar sends the document to
// go-yaml rather than be guessed about.
func (r *fastReader) nextNonBlank(j int) int {
	for j < len(r.lines) && r.lines[j].blank {
		j++
	}
	return j
}

// isSeqItem reports whether line j holds "-" at column col, followed by a
// space or the end of the line.
func (r *fastReader) isSeqItem(j, col int) bool {
	l := r.lines[j]
	p := l.start + col
	return p < l.end && r.src[p] == '-' && (p+1 == l.end || r.src[p+1] == ' ')
}

// inSource reports whether s points into the text being read.
func (r *fastReader) inSource(s string) bool {
	if len(s) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(r.src)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= base && p < base+uintptr(len(r.src))
}

// own returns v with a string that points into the text copied out of it;
// other values (and strings the reader built) are already the object's own.
func (r *fastReader) own(v any) any {
	if str, ok := v.(string); ok && r.inSource(str) {
		return strings.Clone(str)
	}
	return v
}

// ownKey returns key copied out of the text, once per distinct key.
func (r *fastReader) ownKey(key string) string {
	if !r.inSource(key) {
		return key
	}
	if k, ok := r.keys[key]; ok {
		return k
	}
	if r.keys == nil {
		r.keys = map[string]string{}
	}
	k := strings.Clone(key)
	r.keys[k] = k
	return k
}

// parseMapping reads a block mapping whose keys sit at column indent; its
// first key starts at offset pos of line j (after "- " for a mapping in a
// sequence item).
func (r *fastReader) parseMapping(indent, j, pos int) map[string]any {
	m := map[string]any{}
	for !r.failed {
		key, after, ok := r.parseKey(j, pos)
		if !ok {
			r.fail()
			return nil
		}
		if _, dup := m[key]; dup {
			r.fail()
			return nil
		}
		m[r.ownKey(key)] = r.own(r.parseValue(indent, j, after, true))
		j = r.nextSignificant(r.i)
		if j == len(r.lines) || r.lines[j].indent < indent {
			break
		}
		if r.lines[j].indent > indent || r.isSeqItem(j, indent) {
			r.fail()
			return nil
		}
		pos = r.lines[j].start + indent
	}
	return m
}

// parseKey reads a mapping key at offset pos of line j and returns it and
// the offset just after its colon.
func (r *fastReader) parseKey(j, pos int) (string, int, bool) {
	l := r.lines[j]
	s := r.src
	if pos >= l.end {
		return "", 0, false
	}
	var key string
	var end int
	switch c := s[pos]; c {
	case '"', '\'':
		v, e, ok := r.quoted(pos, l.end)
		if !ok {
			return "", 0, false
		}
		key, end = v, e
		for end < l.end && s[end] == ' ' {
			end++
		}
		// go-yaml wants a space after the colon here too.
		if end >= l.end || s[end] != ':' || (end+1 < l.end && s[end+1] != ' ') {
			return "", 0, false
		}
	default:
		if !plainStart(s, pos, l.end) {
			return "", 0, false
		}
		end = pos
		for {
			if end >= l.end {
				return "", 0, false
			}
			if s[end] == ':' && (end+1 == l.end || s[end+1] == ' ') {
				break
			}
			if s[end] == '#' && s[end-1] == ' ' {
				return "", 0, false
			}
			end++
		}
		k := end
		for k > pos && s[k-1] == ' ' {
			k--
		}
		key = s[pos:k]
		// Keys that YAML 1.1 reads as anything but a string (true, null,
		// 1, ...) become JSON keys by a conversion left to go-yaml.
		if _, kind := classifyPlain(key); kind != plainString {
			return "", 0, false
		}
	}
	if end-pos > 1000 {
		// go-yaml refuses simple keys longer than 1024 characters.
		return "", 0, false
	}
	return key, end + 1, true
}

// plainStart reports whether a plain scalar may start at pos: not with an
// indicator, and "-", "?" or ":" only when a non-space follows.
func plainStart(s string, pos, end int) bool {
	switch s[pos] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	case '-', '?', ':':
		return pos+1 < end && s[pos+1] != ' '
	}
	return true
}

// parseValue reads the value after a key's colon (at offset pos of line j)
// or after a sequence item's dash. owner is the column of the key or dash:
// a value on the following lines is indented deeper, except a sequence
// under a mapping key, which may sit at the key's column.
func (r *fastReader) parseValue(owner, j, pos int, inMapping bool) any {
	l := r.lines[j]
	s := r.src
	for pos < l.end && s[pos] == ' ' {
		pos++
	}
	if pos == l.end || s[pos] == '#' {
		if pos < l.end && s[pos-1] != ' ' {
			r.fail()
			return nil
		}
		k := r.nextSignificant(j + 1)
		r.i = j + 1
		if k == len(r.lines) {
			return nil
		}
		kl := r.lines[k]
		switch {
		case kl.indent > owner:
			if r.isSeqItem(k, kl.indent) {
				return r.parseSequence(kl.indent, k)
			}
			return r.parseMapping(kl.indent, k, kl.start+kl.indent)
		case kl.indent == owner && inMapping && r.isSeqItem(k, owner):
			return r.parseSequence(owner, k)
		}
		return nil
	}
	var v any
	end := l.end
	switch c := s[pos]; c {
	case '|', '>':
		return r.blockScalar(owner, j, pos)
	case '"', '\'':
		str, e, ok := r.quoted(pos, l.end)
		if !ok {
			// Perhaps a quoted scalar over several lines.
			str, jj, e, ok := r.quotedLines(owner, j, pos)
			if !ok {
				r.fail()
				return nil
			}
			j, l = jj, r.lines[jj]
			v, end = str, e
			break
		}
		v, end = str, e
	case '[':
		seq, e, ok := r.flowSequence(pos, l.end)
		if !ok {
			r.fail()
			return nil
		}
		v, end = seq, e
	case '{':
		if pos+1 < l.end && s[pos+1] == '}' {
			v, end = map[string]any{}, pos+2
		} else {
			r.fail()
			return nil
		}
	default:
		if !plainStart(s, pos, l.end) {
			r.fail()
			return nil
		}
		e := pos
		for e < l.end {
			if s[e] == ':' && (e+1 == l.end || s[e+1] == ' ') {
				r.fail()
				return nil
			}
			if s[e] == '#' && s[e-1] == ' ' {
				break
			}
			e++
		}
		k := e
		for s[k-1] == ' ' {
			k--
		}
		if e == l.end {
			// No comment: the scalar may go on over deeper lines.
			str, jj, ok := r.plainLines(owner, j, s[pos:k])
			if !ok {
				r.fail()
				return nil
			}
			if jj != j {
				if _, kind := classifyPlain(str); kind != plainString {
					r.fail()
					return nil
				}
				r.i = jj + 1
				return str
			}
		}
		v = r.resolvePlain(s[pos:k])
		end = e
	}
	// Only spaces, then perhaps a comment, may follow on the line.
	for end < l.end && s[end] == ' ' {
		end++
	}
	if end < l.end && (s[end] != '#' || s[end-1] != ' ') {
		r.fail()
		return nil
	}
	// A deeper line after a one-line scalar would continue it (or be an
	// error): go-yaml decides.
	r.i = j + 1
	if k := r.nextNonBlank(j + 1); k < len(r.lines) && r.lines[k].indent > owner {
		r.fail()
		return nil
	}
	return v
}

// plainLines folds a plain scalar that starts with first on line j and
// goes on over the following lines deeper than owner: one line break reads
// as a space, each empty line between as a line break. It returns the
// value and its last line (j when nothing follows).
func (r *fastReader) plainLines(owner, j int, first string) (string, int, bool) {
	s := r.src
	last := j
	var buf []byte
	breaks := 0
	for b := j + 1; b < len(r.lines); b++ {
		bl := r.lines[b]
		if bl.blank {
			breaks++
			continue
		}
		if bl.indent <= owner {
			break
		}
		text := s[bl.start+bl.indent : bl.end]
		// A comment, a dash, a colon or a comment inside: go-yaml decides.
		if text[0] == '#' || text == "-" || strings.HasPrefix(text, "- ") || strings.Contains(text, ": ") || strings.Contains(text, " #") || text[len(text)-1] == ':' {
			return "", 0, false
		}
		text = strings.TrimRight(text, " ")
		if buf == nil {
			buf = append(buf, first...)
		}
		if breaks == 0 {
			buf = append(buf, ' ')
		}
		for ; breaks > 0; breaks-- {
			buf = append(buf, '\n')
		}
		buf = append(buf, text...)
		last = b
		breaks = 0
	}
	if last == j {
		return first, j, true
	}
	return string(buf), last, true
}

// quotedLines reads a quoted scalar that starts at offset pos of line j
// and closes on a later line. Line breaks fold as in a
// plain scalar, the spaces around them dropped. It returns the value, the
// line of the closing quote and the offset after it.
func (r *fastReader) quotedLines(owner, j, pos int) (string, int, int, bool) {
	s := r.src
	q := s[pos]
	var buf []byte
	breaks := -1
	for b := j; b < len(r.lines); b++ {
		bl := r.lines[b]
		start := pos + 1
		if b > j {
			if bl.blank {
				breaks++
				continue
			}
			// go-yaml does not ask a quoted scalar's lines to be
			// indented; a document marker would end the document.
			if bl.indent == 0 && (strings.HasPrefix(s[bl.start:bl.end], "---") || strings.HasPrefix(s[bl.start:bl.end], "...")) {
				return "", 0, 0, false
			}
			start = bl.start + bl.indent
		}
		// The segment up to the closing quote or the end of the line.
		seg, closeAt, ok := quotedSegment(s[start:bl.end], q)
		if !ok {
			return "", 0, 0, false
		}
		if closeAt < 0 {
			trimmed := strings.TrimRight(s[start:bl.end], " ")
			if strings.HasSuffix(trimmed, "\\") {
				// An escaped line break (or an odd run of backslashes).
				return "", 0, 0, false
			}
			seg, _, ok = quotedSegment(trimmed, q)
			if !ok {
				return "", 0, 0, false
			}
		}
		switch {
		case breaks == 0:
			buf = append(buf, ' ')
		case breaks > 0:
			for ; breaks > 0; breaks-- {
				buf = append(buf, '\n')
			}
		}
		buf = append(buf, seg...)
		breaks = 0
		if closeAt >= 0 {
			if b == j {
				return "", 0, 0, false
			}
			return string(buf), b, start + closeAt + 1, true
		}
	}
	return "", 0, 0, false
}

// quotedSegment unescapes text inside quotes q up to the closing quote,
// whose index it returns (-1 when the text has none).
func quotedSegment(text string, q byte) (string, int, bool) {
	var buf []byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			buf = append(buf, '\'')
			i++
			continue
		case c == q:
			return string(buf), i, true
		case c == '\\' && q == '"':
			if i+1 >= len(text) {
				return "", 0, false
			}
			i++
			switch text[i] {
			case '\\', '"', '/':
				buf = append(buf, text[i])
			case 'n':
				buf = append(buf, '\n')
			case 't':
				buf = append(buf, '\t')
			default:
				return "", 0, false
			}
			continue
		}
		buf = append(buf, c)
	}
	return string(buf), -1, true
}

// flowSequence reads a one-line flow sequence of scalars, [a, "b", 'c'],
// starting at pos; nested collections and anything odd send the document
// to go-yaml.
func (r *fastReader) flowSequence(pos, end int) ([]any, int, bool) {
	s := r.src
	seq := []any{}
	i := pos + 1
	for {
		for i < end && s[i] == ' ' {
			i++
		}
		if i >= end {
			return nil, 0, false
		}
		if s[i] == ']' && len(seq) == 0 {
			return seq, i + 1, true
		}
		switch s[i] {
		case '"', '\'':
			v, e, ok := r.quoted(i, end)
			if !ok {
				return nil, 0, false
			}
			seq = append(seq, r.own(v))
			i = e
		default:
			e := i
			for e < end && !strings.ContainsRune(",[]{}:#?", rune(s[e])) {
				e++
			}
			k := e
			for k > i && s[k-1] == ' ' {
				k--
			}
			if k == i || !plainStart(s, i, end) || s[i] == '-' && i+1 < end && !(s[i+1] >= '0' && s[i+1] <= '9') {
				return nil, 0, false
			}
			seq = append(seq, r.own(r.resolvePlain(s[i:k])))
			i = e
		}
		for i < end && s[i] == ' ' {
			i++
		}
		if i >= end {
			return nil, 0, false
		}
		switch s[i] {
		case ']':
			return seq, i + 1, true
		case ',':
			i++
			// A trailing comma: go-yaml decides.
			for i < end && s[i] == ' ' {
				i++
			}
			if i < end && s[i] == ']' {
				return nil, 0, false
			}
		default:
			return nil, 0, false
		}
	}
}

// parseSequence reads a block sequence whose dashes sit at column indent,
// the first on line j.
func (r *fastReader) parseSequence(indent, j int) []any {
	seq := []any{}
	for !r.failed {
		l := r.lines[j]
		pos := l.start + indent + 1
		for pos < l.end && r.src[pos] == ' ' {
			pos++
		}
		switch {
		case pos < l.end && r.isSeqItem(j, pos-l.start):
			// A sequence in a sequence on one line.
			r.fail()
			return nil
		case pos < l.end && r.src[pos] != '#' && r.looksLikeKey(j, pos):
			seq = append(seq, r.parseMapping(pos-l.start, j, pos))
		default:
			seq = append(seq, r.own(r.parseValue(indent, j, pos, false)))
		}
		j = r.nextSignificant(r.i)
		if j == len(r.lines) || r.lines[j].indent < indent {
			break
		}
		if r.lines[j].indent > indent {
			r.fail()
			return nil
		}
		if !r.isSeqItem(j, indent) {
			break
		}
	}
	return seq
}

// looksLikeKey reports whether the text at pos of line j is a mapping key:
// ": " or a final ":" comes before any comment.
func (r *fastReader) looksLikeKey(j, pos int) bool {
	l := r.lines[j]
	s := r.src
	switch s[pos] {
	case '"', '\'':
		_, e, ok := r.quoted(pos, l.end)
		if !ok {
			return false
		}
		for e < l.end && s[e] == ' ' {
			e++
		}
		return e < l.end && s[e] == ':' && (e+1 == l.end || s[e+1] == ' ')
	case '|', '>', '{', '[':
		return false
	}
	for e := pos; e < l.end; e++ {
		if s[e] == ':' && (e+1 == l.end || s[e+1] == ' ') {
			return true
		}
		if s[e] == '#' && e > pos && s[e-1] == ' ' {
			return false
		}
	}
	return false
}

// quoted reads a single- or double-quoted scalar that starts at pos and
// ends on the same line; it returns the value and the offset after the
// closing quote.
func (r *fastReader) quoted(pos, end int) (string, int, bool) {
	s := r.src
	q := s[pos]
	i := pos + 1
	// Fast path: no escapes, the value is a piece of the text.
	for i < end && s[i] != q && s[i] != '\\' {
		i++
	}
	if i >= end {
		return "", 0, false
	}
	if s[i] == q && (q == '"' || i+1 >= end || s[i+1] != '\'') {
		return s[pos+1 : i], i + 1, true
	}
	v, closeAt, ok := quotedSegment(s[pos+1:end], q)
	if !ok || closeAt < 0 {
		return "", 0, false
	}
	return v, pos + 1 + closeAt + 1, true
}

// blockScalar reads a literal (|) or folded (>) scalar whose header is at
// offset pos of line j, with clip or strip chomping.
func (r *fastReader) blockScalar(owner, j, pos int) any {
	l := r.lines[j]
	s := r.src
	literal := s[pos] == '|'
	p := pos + 1
	strip, keep := false, false
	if p < l.end && s[p] == '-' {
		strip = true
		p++
	} else if p < l.end && s[p] == '+' {
		keep = true
		p++
	}
	for p < l.end && s[p] == ' ' {
		p++
	}
	if p < l.end && (s[p] != '#' || s[p-1] != ' ') {
		// An indentation indicator, or text.
		r.fail()
		return nil
	}
	// The content's indentation is that of its first non-blank line.
	k := r.nextNonBlank(j + 1)
	if k == len(r.lines) || r.lines[k].indent <= owner {
		for b := j + 1; b < k; b++ {
			if r.lines[b].end-r.lines[b].start > 0 || keep {
				r.fail()
				return nil
			}
		}
		r.i = j + 1
		return ""
	}
	ind := r.lines[k].indent
	for b := j + 1; b < k; b++ {
		if r.lines[b].end-r.lines[b].start > ind {
			// go-yaml would take the indentation from this blank line.
			r.fail()
			return nil
		}
	}
	last := k // one past the last line of the scalar
	for b := k; b < len(r.lines); b++ {
		bl := r.lines[b]
		if !bl.blank && bl.indent < ind {
			break
		}
		last = b + 1
	}
	// Trailing empty lines are for chomping; a line of more spaces than
	// the indentation is content.
	end := last
	for end > k && r.lines[end-1].end-r.lines[end-1].start <= ind {
		end--
	}
	if r.lines[end-1].end == len(s) {
		// The last line has no line break: go-yaml decides.
		r.fail()
		return nil
	}
	size := last - j + 1
	for b := j + 1; b < end; b++ {
		size += max(r.lines[b].end-r.lines[b].start-ind, 0)
	}
	buf := make([]byte, 0, size)
	// As libyaml: a line break between two lines of text folds to a space
	// in a folded scalar, unless either line is more indented (starts with
	// a space); empty lines between are line breaks.
	pendingBreak, emptyLines, prevMoreIndented := false, 0, false
	for b := j + 1; b < end; b++ {
		bl := r.lines[b]
		if bl.end-bl.start <= ind {
			emptyLines++
			continue
		}
		text := s[bl.start+ind : bl.end]
		moreIndented := text[0] == ' '
		if !literal && pendingBreak && !prevMoreIndented && !moreIndented {
			if emptyLines == 0 {
				buf = append(buf, ' ')
			}
		} else if pendingBreak {
			buf = append(buf, '\n')
		}
		for ; emptyLines > 0; emptyLines-- {
			buf = append(buf, '\n')
		}
		buf = append(buf, text...)
		pendingBreak, prevMoreIndented = true, moreIndented
	}
	if !strip {
		buf = append(buf, '\n')
	}
	if keep {
		for b := end; b < last; b++ {
			if r.lines[b].end == len(s) {
				r.fail()
				return nil
			}
			buf = append(buf, '\n')
		}
	}
	r.i = last
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// yaml11Words are the plain scalars starting with a letter or ~ that
// go-yaml v2 (YAML 1.1) reads as a boolean or null.
var yaml11Words = map[string]any{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"true": true, "True": true, "TRUE": true,
	"on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false,
	"false": false, "False": false, "FALSE": false,
	"off": false, "Off": false, "OFF": false,
	"~": nil, "null": nil, "Null": nil, "NULL": nil,
}

// yaml11Start holds the first characters of yaml11Words.
var yaml11Start = [256]bool{'y': true, 'Y': true, 'n': true, 'N': true, 't': true, 'T': true, 'f': true, 'F': true, 'o': true, 'O': true, '~': true}

// Kinds of plain scalar by their first characters, as go-yaml v2 tells
// them apart.
const (
	plainString = iota
	plainWord   // a boolean or null from yaml11Words
	plainNumber // may be a number or a timestamp
)

// classifyPlain tells what a plain scalar is without parsing numbers.
func classifyPlain(s string) (any, int) {
	if s == "" {
		return nil, plainWord
	}
	switch c := s[0]; {
	case c == '+' || c == '-':
		// go-yaml drops underscores before it reads a number: +_1 is 1.
		rest := strings.TrimLeft(s[1:], "_")
		if rest == "" || !(rest[0] == '.' || rest[0] >= '0' && rest[0] <= '9') {
			return s, plainString
		}
		return nil, plainNumber
	case c == '.' || c >= '0' && c <= '9':
		return nil, plainNumber
	}
	if len(s) <= 5 && yaml11Start[s[0]] {
		if v, ok := yaml11Words[s]; ok {
			return v, plainWord
		}
	}
	return s, plainString
}

// resolvePlain gives a plain scalar's value: a string, a boolean, null, or
// a number as the JSON decoder reads it.
func (r *fastReader) resolvePlain(s string) any {
	v, kind := classifyPlain(s)
	if kind != plainNumber {
		return v
	}
	if n, ok := simpleInt(s); ok {
		return n
	}
	// Floats, timestamps, octal, hex, 1_000 and the like: ask go-yaml,
	// then the JSON decoder, as library-go's path does.
	if v, ok := r.memo[s]; ok {
		return v
	}
	js, err := yaml.YAMLToJSON([]byte("v: " + s))
	if err != nil || !bytes.HasPrefix(js, []byte(`{"v":`)) || !bytes.HasSuffix(js, []byte("}")) {
		r.fail()
		return nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(js, &m); err != nil || len(m) != 1 {
		r.fail()
		return nil
	}
	v, ok := m["v"]
	// The value must encode back to the JSON go-yaml's path wrote (a
	// uint64 beyond int64 would not), since Raw is encoded from it.
	if !ok || !bytes.Equal(appendJSON(nil, v), js[5:len(js)-1]) {
		r.fail()
		return nil
	}
	if r.memo == nil {
		r.memo = map[string]any{}
	}
	r.memo[s] = v
	return v
}

// simpleInt reads a decimal integer without sign, leading zeros or
// underscores that fits an int64 with room to spare.
func simpleInt(s string) (int64, bool) {
	neg := false
	d := s
	if d[0] == '-' {
		neg, d = true, d[1:]
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || (neg && n == 0) {
		return 0, false
	}
	return n, true
}

var jsonPool = sync.Pool{New: func() any { return new([]byte) }}

// fastDocument reads a document with the fast reader into the manifest
// library-go's path would build, or reports false when that path must read
// it: the reader is unsure, or the identity fields are missing or no
// strings (library-go's and checkIdentityTypes' errors then say so).
func fastDocument(text []byte, enabled bool) (m manifest.Manifest, ok bool) {
	if !enabled {
		return m, false
	}
	defer func() {
		if recover() != nil {
			m, ok = manifest.Manifest{}, false
		}
	}()
	obj, ok := readFastYAML(text)
	if !ok {
		return m, false
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	if apiVersion == "" || kind == "" || meta == nil {
		return m, false
	}
	name, isString := meta["name"].(string)
	if !isString {
		return m, false
	}
	identityMeta := map[string]any{"name": name}
	if ns, found := meta["namespace"]; found {
		if _, isString := ns.(string); !isString {
			return m, false
		}
		identityMeta["namespace"] = ns
	}
	// library-go keeps the identity it checked in an unexported field,
	// which only its decoder sets: decode the identity alone, so the same
	// checks run and fail the same way, then hand over the whole object.
	identity := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": identityMeta}
	if err := m.UnmarshalJSON(appendJSON(nil, identity)); err != nil || m.Obj == nil {
		return manifest.Manifest{}, false
	}
	// Encode into a scratch buffer, then keep an exact-size copy: Raw
	// lives as long as the release.
	scratch := jsonPool.Get().(*[]byte)
	*scratch = appendJSON((*scratch)[:0], obj)
	m.Raw = bytes.Clone(*scratch)
	if cap(*scratch) <= 4<<20 {
		jsonPool.Put(scratch)
	}
	m.Obj.Object = obj
	return m, true
}
