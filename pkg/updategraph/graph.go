// Package updategraph reads and edits release update graphs in the
// Cincinnati JSON format: nodes (a version, its payload and string
// metadata) and edges (index pairs, from the older release to the one it
// updates to). The operator reads a graph to offer updates and to learn
// which releases are deprecated; `payload-applier update-graph` edits one
// for release engineers. It knows nothing of clusters.
package updategraph

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
)

// Node metadata keys, as Cincinnati and the CVO name them.
const (
	// DeprecatedKey marks a deprecated release; its value is the message
	// shown to clusters that run it.
	DeprecatedKey = "io.openshift.upgrades.graph.release.deprecated"
	// ChannelsKey lists the channels a release is in, comma-separated.
	ChannelsKey = "io.openshift.upgrades.graph.release.channels"
)

// Graph is an update graph.
type Graph struct {
	Nodes []Node   `json:"nodes"`
	Edges [][2]int `json:"edges"`
	// ConditionalEdges are kept as read and written back unchanged;
	// Conditional is what Parse read from them, for the operator.
	ConditionalEdges json.RawMessage   `json:"conditionalEdges,omitempty"`
	Conditional      []ConditionalEdge `json:"-"`
	// DuplicateEdges counts the edges Parse read more than once and kept
	// once.
	DuplicateEdges int `json:"-"`
}

// Node is one release.
type Node struct {
	Version  string            `json:"version"`
	Payload  string            `json:"payload"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Deprecation returns the node's deprecation message and whether it is
// deprecated. An empty message still deprecates.
func (n Node) Deprecation() (string, bool) {
	msg, ok := n.Metadata[DeprecatedKey]
	return msg, ok
}

// Channels lists the node's channels, each once, in the order given.
func (n Node) Channels() []string {
	parts := strings.Split(n.Metadata[ChannelsKey], ",")
	out := parts[:0]
	// A set only for a long list, where Contains would be quadratic.
	var seen map[string]bool
	if len(parts) > 16 {
		seen = make(map[string]bool, len(parts))
	}
	for _, c := range parts {
		c = strings.TrimSpace(c)
		if c == "" || seen[c] || (seen == nil && slices.Contains(out, c)) {
			continue
		}
		if seen != nil {
			seen[c] = true
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (n *Node) setChannels(channels []string) {
	if len(channels) == 0 {
		delete(n.Metadata, ChannelsKey)
		return
	}
	if n.Metadata == nil {
		n.Metadata = map[string]string{}
	}
	n.Metadata[ChannelsKey] = strings.Join(channels, ",")
}

// Encode writes the graph as indented JSON.
func (g *Graph) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// A graph is no HTML page: conditionalEdges are written back as read,
	// and a URL keeps its & rather than becoming \u0026.
	enc.SetEscapeHTML(false)
	return enc.Encode(g)
}

// Find returns the index of the node with version, or -1.
func (g *Graph) Find(version string) int {
	for i, n := range g.Nodes {
		if n.Version == version {
			return i
		}
	}
	return -1
}

// HasChannels reports whether any node names its channels; a graph
// without channel metadata is taken to be one channel's, as a server
// answers a query for a channel.
func (g *Graph) HasChannels() bool {
	for _, n := range g.Nodes {
		if len(n.Channels()) > 0 {
			return true
		}
	}
	return false
}

// InChannel returns the part of the graph in channel: its nodes and the
// edges between them. A graph without channel metadata is returned whole.
func (g *Graph) InChannel(channel string) *Graph {
	if !g.HasChannels() {
		return g
	}
	out := &Graph{Nodes: []Node{}, Edges: [][2]int{}, ConditionalEdges: g.ConditionalEdges}
	index := map[int]int{}
	inChannel := map[string]bool{}
	for i, n := range g.Nodes {
		if slices.Contains(n.Channels(), channel) {
			inChannel[n.Version] = true
			index[i] = len(out.Nodes)
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		from, okFrom := index[e[0]]
		to, okTo := index[e[1]]
		if okFrom && okTo {
			out.Edges = append(out.Edges, [2]int{from, to})
		}
	}
	out.Conditional = g.conditionalInChannel(func(v string) bool { return inChannel[v] })
	return out
}

// Updates lists the releases version may update to, newest first, leaving
// out deprecated ones: nothing updates to a deprecated release. found is
// false when version is not in the graph.
func (g *Graph) Updates(version string) (updates []Node, found bool) {
	from := g.Find(version)
	if from < 0 {
		return nil, false
	}
	for _, e := range g.Edges {
		if e[0] != from {
			continue
		}
		if _, deprecated := g.Nodes[e[1]].Deprecation(); !deprecated {
			updates = append(updates, g.Nodes[e[1]])
		}
	}
	sortNewestFirst(updates)
	return updates, true
}

// Deprecations maps every deprecated release of the graph to its message.
func (g *Graph) Deprecations() map[string]string {
	out := map[string]string{}
	for _, n := range g.Nodes {
		if msg, ok := n.Deprecation(); ok {
			out[n.Version] = msg
		}
	}
	return out
}

func sortNewestFirst(nodes []Node) {
	// Each version parsed once, not once per comparison.
	type release struct {
		version semver.Version
		node    Node
	}
	releases := make([]release, len(nodes))
	for i, n := range nodes {
		v, _ := semver.Parse(n.Version)
		releases[i] = release{v, n}
	}
	slices.SortStableFunc(releases, func(a, b release) int { return b.version.Compare(a.version) })
	for i, r := range releases {
		nodes[i] = r.node
	}
}
