package updategraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Caps on a graph read by Parse. A real OpenShift graph holding every
// channel has a few thousand releases, tens of thousands of edges and a
// handful of short metadata values per release, far below each of these;
// they keep a hostile graph from costing the operator memory and time out
// of proportion to what it can offer. docs/operations.md lists them.
const (
	// MaxGraphBytes bounds a graph read from a file or a server.
	MaxGraphBytes = 32 << 20
	// MaxNodes bounds the releases of a graph.
	MaxNodes = 50_000
	// MaxEdges bounds the distinct edges of a graph; an edge listed twice
	// counts once.
	MaxEdges = 1_000_000
	// MaxVersionBytes bounds a release's version.
	MaxVersionBytes = 256
	// MaxPayloadBytes bounds a release's payload pull spec.
	MaxPayloadBytes = 1024
	// MaxMetadataKeys bounds the metadata keys of one release.
	MaxMetadataKeys = 64
	// MaxMetadataKeyBytes bounds one metadata key.
	MaxMetadataKeyBytes = 256
	// MaxMetadataValueBytes bounds one metadata value: a deprecation
	// message, a URL, the list of channels.
	MaxMetadataValueBytes = 16 << 10
	// MaxChannelNameBytes bounds one channel's name.
	MaxChannelNameBytes = 256
	// MaxTokenBytes bounds one string or number as written, before it is
	// decoded, escapes included: six bytes (\u0000) for each byte of the
	// longest string any cap allows, so that no string within its own cap
	// is refused by this one.
	MaxTokenBytes = 6 * (16 << 10)
)

// CapError is a graph over one of the caps above.
type CapError struct {
	// Cap names the constant, such as "MaxNodes".
	Cap   string
	Limit int
	// What says what is over it.
	What string
}

func (e *CapError) Error() string {
	return fmt.Sprintf("%s (cap %s = %d)", e.What, e.Cap, e.Limit)
}

func overCap(name string, limit int, format string, args ...any) *CapError {
	return &CapError{Cap: name, Limit: limit, What: fmt.Sprintf(format, args...)}
}

// Parse reads a graph of at most MaxGraphBytes and checks that it is well
// formed: every version a unique Semantic Version, every edge between two
// distinct nodes, every count and string within its cap, no key given
// twice. It names the first problem. An edge listed more than once is kept
// once, as Cincinnati itself never lists one twice and a repeat says
// nothing new; Graph.DuplicateEdges counts the repeats.
//
// The graph is decoded token by token as it is read, never a whole node
// or list at once, and each cap is checked as soon as it can be passed,
// so that memory follows the graph it yields rather than the bytes that
// describe it.
func Parse(r io.Reader) (*Graph, error) {
	in := &guardReader{r: io.LimitReader(r, MaxGraphBytes+1)}
	p := &parser{in: in, dec: json.NewDecoder(in), edgeSet: map[uint64]struct{}{}}
	// Numbers read as tokens stay text: only edge indices are numbers we
	// use, and an ignored field's 1e999 is no error.
	p.dec.UseNumber()
	g, err := p.graph()
	if in.n > MaxGraphBytes {
		return nil, fmt.Errorf("the graph is larger than %d MiB", MaxGraphBytes>>20)
	}
	if in.err != nil {
		return nil, in.err
	}
	if err != nil && in.readErr != nil {
		// What failed the read, not the JSON it left unfinished.
		return nil, fmt.Errorf("read the graph: %w", in.readErr)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// guardReader counts the bytes the decoder reads and refuses a string or
// number longer than MaxTokenBytes before the decoder holds it: the
// decoder buffers a whole token before it returns it. While recording, it
// keeps what it reads.
type guardReader struct {
	r   io.Reader
	n   int64
	err error
	// readErr is the first error of the body other than io.EOF.
	readErr error
	// budget, when set, bounds what one value decoded whole may read.
	budget int
	// run counts the bytes of the string or number being read.
	run               int
	inString, escaped bool
	recording         bool
	recorded          []byte
}

// maxRead bounds one read.
const maxRead = 32 << 10

func (g *guardReader) Read(b []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	// Short reads, so that a value decoded whole is charged for little
	// beyond its own bytes however large the decoder's buffer has grown.
	if len(b) > maxRead {
		b = b[:maxRead]
	}
	n, err := g.r.Read(b)
	for i, c := range b[:n] {
		switch {
		case g.escaped:
			g.escaped = false
			g.run++
		case g.inString && c == '"':
			g.inString = false
		case g.inString:
			g.escaped = c == '\\'
			g.run++
		case c == '"':
			g.inString, g.run = true, 0
		case strings.IndexByte("{}[],: \t\r\n", c) >= 0:
			g.run = 0
		default:
			g.run++
		}
		if g.run > MaxTokenBytes {
			// The decoder still gets what came before, so that an
			// earlier syntax error is reported as such.
			g.err = overCap("MaxTokenBytes", MaxTokenBytes, "a string or number at byte %d is longer than %d bytes", g.n+int64(i)-MaxTokenBytes, MaxTokenBytes)
			n, err = i, g.err
			break
		}
	}
	g.n += int64(n)
	if g.budget > 0 && err == nil {
		if g.budget -= n; g.budget <= 0 {
			g.err = overCap("MaxTokenBytes", MaxTokenBytes, "the value read whole before byte %d is longer than %d bytes", g.n, MaxTokenBytes)
			err = g.err
		}
	}
	if g.recording {
		// Doubling: append's growth of a large slice, a quarter at a
		// time, would allocate five times what it keeps.
		if len(g.recorded)+n > cap(g.recorded) {
			g.recorded = slices.Grow(g.recorded, len(g.recorded)+n)
		}
		g.recorded = append(g.recorded, b[:n]...)
	}
	if err != nil && err != io.EOF && g.readErr == nil {
		g.readErr = err
	}
	return n, err
}

type parser struct {
	in  *guardReader
	dec *json.Decoder
	// edgeSet holds each edge read so far, from<<32|to; edgeAt is the
	// position in the listed edges of each edge kept.
	edgeSet map[uint64]struct{}
	edgeAt  []int
	// pairBuf receives one edge, raw one conditional edge: decoding
	// into a field costs no allocation.
	pairBuf [3]edgeIndex
	raw     json.RawMessage
}

// malformed is a problem with the JSON itself, located by byte offset.
func (p *parser) malformed(format string, args ...any) error {
	return fmt.Errorf("not a Cincinnati graph: %s (at byte %d)", fmt.Sprintf(format, args...), p.dec.InputOffset())
}

func (p *parser) token() (json.Token, error) {
	t, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, p.malformed("%v", err)
	}
	return t, nil
}

// open reads the opening delimiter of an object or array; null reports
// false, as encoding/json reads null as empty. what names the value, and
// is called only for an error.
func (p *parser) open(d json.Delim, what func() string) (bool, error) {
	t, err := p.token()
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if t != d {
		return false, p.malformed("%s is not an %s", what(), map[json.Delim]string{'{': "object", '[': "array"}[d])
	}
	return true, nil
}

// close reads the delimiter ending what open began.
func (p *parser) close() error {
	_, err := p.token()
	return err
}

func named(what string) func() string { return func() string { return what } }

// key reads an object's next key.
func (p *parser) key() (string, error) {
	t, err := p.token()
	if err != nil {
		return "", err
	}
	return t.(string), nil // the decoder allows nothing else here
}

// str reads a string; null reads as "", as encoding/json reads it.
func (p *parser) str(what func() string) (string, error) {
	t, err := p.token()
	if err != nil {
		return "", err
	}
	switch t := t.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	}
	return "", p.malformed("%s is not a string", what())
}

// skip reads one value of any shape, token by token, so that an ignored
// field costs no more memory than one of its tokens.
func (p *parser) skip() error {
	for depth := 0; ; {
		t, err := p.token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// graph reads the top-level object. A key given twice is refused: with
// encoding/json the last one would silently win.
func (p *parser) graph() (*Graph, error) {
	if ok, err := p.open('{', named("the graph")); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New(`not a Cincinnati graph: no "nodes"`)
	}
	g := &Graph{}
	seen := map[string]bool{}
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, p.malformed("the graph has the key %q twice", excerpt(key))
		}
		seen[key] = true
		switch key {
		case "nodes":
			err = p.nodes(g)
		case "edges":
			err = p.edges(g)
		case "conditionalEdges":
			err = p.conditional(g)
		default:
			err = p.malformed("unknown field %q", excerpt(key))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := p.close(); err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.malformed("more data after the graph")
	}
	if g.Nodes == nil {
		return nil, errors.New(`not a Cincinnati graph: no "nodes"`)
	}
	if g.Edges == nil {
		g.Edges = [][2]int{}
	}
	if err := p.checkEdges(g); err != nil {
		return nil, err
	}
	return g, nil
}

func (p *parser) nodes(g *Graph) error {
	if ok, err := p.open('[', named(`"nodes"`)); err != nil || !ok {
		return err
	}
	g.Nodes = []Node{}
	seen := map[string]int{}
	for p.dec.More() {
		i := len(g.Nodes)
		if i == MaxNodes {
			return overCap("MaxNodes", MaxNodes, "the graph has more than %d nodes", MaxNodes)
		}
		n, err := p.node(i)
		if err != nil {
			return err
		}
		if j, dup := seen[n.Version]; dup {
			return fmt.Errorf("nodes %d and %d both have version %s", j, i, n.Version)
		}
		seen[n.Version] = i
		g.Nodes = append(g.Nodes, n)
	}
	return p.close()
}

// node reads one node strictly: no unknown field and no key twice, in
// the node or in its metadata, where encoding/json would let the last one
// win. Each cap is checked as its value is read.
func (p *parser) node(i int) (Node, error) {
	var n Node
	if ok, err := p.open('{', func() string { return fmt.Sprint("node ", i) }); err != nil {
		return n, err
	} else if !ok {
		return n, p.malformed("node %d is null", i)
	}
	var haveVersion, havePayload, haveMetadata bool
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return n, err
		}
		var have *bool
		switch key {
		case "version":
			have = &haveVersion
		case "payload":
			have = &havePayload
		case "metadata":
			have = &haveMetadata
		default:
			return n, p.malformed("node %d: unknown field %q", i, excerpt(key))
		}
		if *have {
			return n, p.malformed("node %d: duplicate field %q", i, key)
		}
		*have = true
		switch key {
		case "version":
			if n.Version, err = p.str(func() string { return fmt.Sprintf("node %d: the version", i) }); err != nil {
				return n, err
			}
			err = checkVersion(i, n.Version)
		case "payload":
			if n.Payload, err = p.str(func() string { return fmt.Sprintf("node %d: the payload", i) }); err != nil {
				return n, err
			}
			if len(n.Payload) > MaxPayloadBytes {
				err = overCap("MaxPayloadBytes", MaxPayloadBytes, "%s: the payload is longer than %d bytes", nodeName(i, &n), MaxPayloadBytes)
			}
		case "metadata":
			err = p.metadata(i, &n)
		}
		if err != nil {
			return n, err
		}
	}
	if !haveVersion {
		if err := checkVersion(i, ""); err != nil {
			return n, err
		}
	}
	return n, p.close()
}

func checkVersion(i int, version string) error {
	if len(version) > MaxVersionBytes {
		return overCap("MaxVersionBytes", MaxVersionBytes, "node %d: the version is longer than %d bytes", i, MaxVersionBytes)
	}
	if _, err := semver.Parse(version); err != nil {
		return fmt.Errorf("node %d: version %q is not a Semantic Version", i, version)
	}
	return nil
}

// nodeName names node i by its version once that is read.
func nodeName(i int, n *Node) string {
	if n.Version == "" {
		return fmt.Sprint("node ", i)
	}
	return fmt.Sprintf("node %d (%s)", i, n.Version)
}

// metadata reads a node's metadata, refusing it at the first key past
// MaxMetadataKeys.
func (p *parser) metadata(i int, n *Node) error {
	if ok, err := p.open('{', func() string { return fmt.Sprintf("node %d: the metadata", i) }); err != nil || !ok {
		return err
	}
	n.Metadata = map[string]string{}
	for p.dec.More() {
		if len(n.Metadata) == MaxMetadataKeys {
			return overCap("MaxMetadataKeys", MaxMetadataKeys, "%s has more than %d metadata keys", nodeName(i, n), MaxMetadataKeys)
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		if len(k) > MaxMetadataKeyBytes {
			return overCap("MaxMetadataKeyBytes", MaxMetadataKeyBytes, "%s: the metadata key %q is longer than %d bytes", nodeName(i, n), excerpt(k), MaxMetadataKeyBytes)
		}
		if _, dup := n.Metadata[k]; dup {
			return p.malformed("node %d: duplicate field %q", i, "metadata."+k)
		}
		v, err := p.str(func() string { return fmt.Sprintf("node %d: metadata %q", i, k) })
		if err != nil {
			return err
		}
		if len(v) > MaxMetadataValueBytes {
			return overCap("MaxMetadataValueBytes", MaxMetadataValueBytes, "%s: the value of metadata %q is longer than %d bytes", nodeName(i, n), k, MaxMetadataValueBytes)
		}
		if k == ChannelsKey {
			for c := range strings.SplitSeq(v, ",") {
				if c = strings.TrimSpace(c); len(c) > MaxChannelNameBytes {
					return overCap("MaxChannelNameBytes", MaxChannelNameBytes, "%s: the channel name %q is longer than %d bytes", nodeName(i, n), excerpt(c), MaxChannelNameBytes)
				}
			}
		}
		n.Metadata[k] = v
	}
	return p.close()
}

// edges reads the edge list, keeping the first of any repeated edge. A
// repeated edge costs reading time, never memory.
func (p *parser) edges(g *Graph) error {
	if ok, err := p.open('[', named(`"edges"`)); err != nil || !ok {
		return err
	}
	g.Edges = [][2]int{}
	for listed := 0; p.dec.More(); listed++ {
		from, to, err := p.pair(listed)
		if err != nil {
			return err
		}
		// No index at or past MaxNodes can name a node, whether the
		// nodes come before the edges or after.
		if from < 0 || from >= MaxNodes || to < 0 || to >= MaxNodes {
			return fmt.Errorf("edge %d [%d, %d] names a node that does not exist", listed, from, to)
		}
		key := uint64(from)<<32 | uint64(to)
		if _, dup := p.edgeSet[key]; dup {
			g.DuplicateEdges++
			continue
		}
		if len(g.Edges) == MaxEdges {
			return overCap("MaxEdges", MaxEdges, "the graph has more than %d distinct edges", MaxEdges)
		}
		p.edgeSet[key] = struct{}{}
		g.Edges = append(g.Edges, [2]int{from, to})
		p.edgeAt = append(p.edgeAt, listed)
	}
	return p.close()
}

// decodeWhole decodes one value whole, which for a small value costs far
// less than reading it token by token, within MaxTokenBytes.
func (p *parser) decodeWhole(v any) error {
	p.in.budget = MaxTokenBytes + maxRead
	err := p.dec.Decode(v)
	p.in.budget = 0
	if p.in.err != nil {
		return p.in.err
	}
	return err
}

// pair reads one edge. It is decoded whole, as reading its indices one
// by one would cost an allocation each, into a fixed array, so that a
// long list costs no memory; the guard's budget keeps the decoder from
// buffering a long one.
func (p *parser) pair(listed int) (from, to int, err error) {
	p.pairBuf = [3]edgeIndex{}
	if err := p.decodeWhole(&p.pairBuf); err != nil {
		if _, over := err.(*CapError); over {
			return 0, 0, err
		}
		return 0, 0, p.malformed("edge %d is not a pair of node indices: %s", listed, excerpt(err.Error()))
	}
	n := 0
	for n < len(p.pairBuf) && p.pairBuf[n].set {
		n++
	}
	switch n {
	case 2:
		return p.pairBuf[0].value, p.pairBuf[1].value, nil
	case 3:
		return 0, 0, p.malformed("edge %d has more than 2 elements, not a pair of node indices", listed)
	}
	return 0, 0, p.malformed("edge %d has %d elements, not a pair of node indices", listed, n)
}

// edgeIndex is one element of an edge: an integer, nothing else, not even
// the null encoding/json would read as zero.
type edgeIndex struct {
	value int
	set   bool
}

func (e *edgeIndex) UnmarshalJSON(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("%s is not an integer", excerpt(string(b)))
	}
	e.value, e.set = n, true
	return nil
}

// checkEdges checks, once every node is known, that each edge joins two
// distinct nodes.
func (p *parser) checkEdges(g *Graph) error {
	for i, e := range g.Edges {
		if e[0] >= len(g.Nodes) || e[1] >= len(g.Nodes) {
			return fmt.Errorf("edge %d [%d, %d] names a node that does not exist (%d nodes)", p.edgeAt[i], e[0], e[1], len(g.Nodes))
		}
		if e[0] == e[1] {
			return fmt.Errorf("edge %d updates %s to itself", p.edgeAt[i], g.Nodes[e[0]].Version)
		}
	}
	return nil
}

// excerpt shortens s for an error message.
func excerpt(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return textwrap.Clip(s, limit) + "…"
}
