package updategraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	sigsjson "sigs.k8s.io/json"

	"github.com/payload-applier/payload-applier/pkg/payload"
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
// The graph is decoded as it is read, never held whole, so that memory
// follows the graph it yields rather than the bytes that describe it.
func Parse(r io.Reader) (*Graph, error) {
	in := &countingReader{r: io.LimitReader(r, MaxGraphBytes+1)}
	p := &parser{dec: json.NewDecoder(in), edgeSet: map[uint64]struct{}{}}
	g, err := p.graph()
	if in.n > MaxGraphBytes {
		return nil, fmt.Errorf("the graph is larger than %d MiB", MaxGraphBytes>>20)
	}
	if err != nil && in.err != nil {
		// What failed the read, not the JSON it left unfinished.
		return nil, fmt.Errorf("read the graph: %w", in.err)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

type countingReader struct {
	r   io.Reader
	n   int64
	err error // the first read error other than io.EOF
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

type parser struct {
	dec *json.Decoder
	// edgeSet holds each edge read so far, from<<32|to; edgeAt is the
	// position in the listed edges of each edge kept.
	edgeSet map[uint64]struct{}
	edgeAt  []int
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
// false, as encoding/json reads null as empty.
func (p *parser) open(d json.Delim, what string) (bool, error) {
	t, err := p.token()
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if t != d {
		return false, p.malformed("%s is not an %s", what, map[json.Delim]string{'{': "object", '[': "array"}[d])
	}
	return true, nil
}

// close reads the delimiter ending what open began.
func (p *parser) close() error {
	_, err := p.token()
	return err
}

// graph reads the top-level object. A key given twice is refused: with
// encoding/json the last one would silently win.
func (p *parser) graph() (*Graph, error) {
	if ok, err := p.open('{', "the graph"); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New(`not a Cincinnati graph: no "nodes"`)
	}
	g := &Graph{}
	seen := map[string]bool{}
	for p.dec.More() {
		t, err := p.token()
		if err != nil {
			return nil, err
		}
		key := t.(string) // the decoder allows nothing else here
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
			// Kept as read for editors, and decoded for the operator.
			if err = p.dec.Decode(&g.ConditionalEdges); err != nil {
				err = p.malformed("conditionalEdges: %v", err)
			} else if bytes.Equal(g.ConditionalEdges, []byte("null")) {
				g.ConditionalEdges = nil
			} else {
				g.Conditional, err = parseConditional(g.ConditionalEdges)
			}
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
	if ok, err := p.open('[', `"nodes"`); err != nil || !ok {
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

// node decodes one node strictly: no unknown field and no key twice,
// in the node or in its metadata, where encoding/json would let the last
// one win. Each node passes through one reused buffer.
func (p *parser) node(i int) (Node, error) {
	var n Node
	if err := p.dec.Decode(&p.raw); err != nil {
		return n, p.malformed("node %d: %v", i, err)
	}
	if bytes.Equal(p.raw, []byte("null")) {
		return n, p.malformed("node %d is null", i)
	}
	strict, err := sigsjson.UnmarshalStrict(p.raw, &n, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err = errors.Join(append([]error{err}, strict...)...); err != nil {
		return n, p.malformed("node %d: %v", i, err)
	}
	return n, checkNode(i, n)
}

// checkNode checks one node's version and the sizes of its strings.
func checkNode(i int, n Node) error {
	if len(n.Version) > MaxVersionBytes {
		return overCap("MaxVersionBytes", MaxVersionBytes, "node %d: the version is longer than %d bytes", i, MaxVersionBytes)
	}
	if _, err := semver.Parse(n.Version); err != nil {
		return fmt.Errorf("node %d: version %q is not a Semantic Version", i, n.Version)
	}
	if len(n.Payload) > MaxPayloadBytes {
		return overCap("MaxPayloadBytes", MaxPayloadBytes, "node %d (%s): the payload is longer than %d bytes", i, n.Version, MaxPayloadBytes)
	}
	if len(n.Metadata) > MaxMetadataKeys {
		return overCap("MaxMetadataKeys", MaxMetadataKeys, "node %d (%s) has more than %d metadata keys", i, n.Version, MaxMetadataKeys)
	}
	var over []string
	for k, v := range n.Metadata {
		if len(k) > MaxMetadataKeyBytes || len(v) > MaxMetadataValueBytes {
			over = append(over, k)
		}
	}
	if len(over) > 0 {
		// The least key, so that one graph always gets the same error.
		k := slices.Min(over)
		if len(k) > MaxMetadataKeyBytes {
			return overCap("MaxMetadataKeyBytes", MaxMetadataKeyBytes, "node %d (%s): the metadata key %q is longer than %d bytes", i, n.Version, excerpt(k), MaxMetadataKeyBytes)
		}
		return overCap("MaxMetadataValueBytes", MaxMetadataValueBytes, "node %d (%s): the value of metadata %q is longer than %d bytes", i, n.Version, k, MaxMetadataValueBytes)
	}
	for c := range strings.SplitSeq(n.Metadata[ChannelsKey], ",") {
		if c = strings.TrimSpace(c); len(c) > MaxChannelNameBytes {
			return overCap("MaxChannelNameBytes", MaxChannelNameBytes, "node %d (%s): the channel name %q is longer than %d bytes", i, n.Version, excerpt(c), MaxChannelNameBytes)
		}
	}
	return nil
}

// edges reads the edge list, keeping the first of any repeated edge.
// Each pair is decoded into one reused slice: a repeated edge costs
// reading time, never memory.
func (p *parser) edges(g *Graph) error {
	if ok, err := p.open('[', `"edges"`); err != nil || !ok {
		return err
	}
	g.Edges = [][2]int{}
	var pair []int
	for listed := 0; p.dec.More(); listed++ {
		if err := p.dec.Decode(&pair); err != nil {
			return p.malformed("edge %d is not a pair of node indices: %v", listed, err)
		}
		if len(pair) != 2 {
			return p.malformed("edge %d has %d elements, not a pair of node indices", listed, len(pair))
		}
		from, to := pair[0], pair[1]
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
	return payload.Clip(s, limit) + "…"
}
