package updategraph

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DeprecateOptions say which releases to deprecate and how.
type DeprecateOptions struct {
	// Releases are deprecated in order, each on the graph the previous
	// ones left.
	Releases []string
	// Truncate also removes each release's tail: the releases that update
	// into it, in the channels they share with it. Without it a release is
	// only marked, and the operator stops offering it.
	Truncate bool
	// DefaultChannel is the channel new clusters install from; its head is
	// never removed. Required with Truncate when the graph has channels.
	DefaultChannel string
	// AllowChannelRemoval lets Truncate remove every channel at once, when
	// Releases lists the head of each.
	AllowChannelRemoval bool
	// Message is the deprecation message; default "Release V is deprecated."
	Message string
}

// DeprecateResult is the new graph and what changed.
type DeprecateResult struct {
	Graph *Graph
	// NotFound lists releases not in the graph, left alone: unknown, or
	// already truncated by an earlier deprecation.
	NotFound []string
	// Removed lists the releases removed from the graph.
	Removed []string
	// RemovedChannels lists channels that lost their head.
	RemovedChannels []string
}

// ErrRemovingDefaultChannel: a truncation would remove the default
// channel's head.
var ErrRemovingDefaultChannel = errors.New("removing the default channel's head")

// Deprecate marks releases deprecated and, with Truncate, removes their
// tails the way opm's deprecatetruncate did for bundles: a release behind a
// deprecated one leaves the channels it shares with it, and goes only when
// it is in no other channel and nothing outside the tail updates from it
// (a branch point stays); nothing updates into the deprecated release any
// more, which stays as something to update from; a channel it heads
// disappears. It never edits g, and returns no graph when any release
// fails: the changes are all or nothing.
func Deprecate(g *Graph, opts DeprecateOptions) (*DeprecateResult, error) {
	w := newWorkGraph(g)
	res := &DeprecateResult{}
	if opts.Truncate && w.named && opts.DefaultChannel == "" {
		return nil, errors.New("the graph has channels: name the default channel, whose head is never removed")
	}
	if opts.Truncate && opts.AllowChannelRemoval {
		removedAll, err := w.removeEverything(opts)
		if err != nil {
			return nil, err
		}
		if removedAll {
			res.Removed = w.versions(w.live())
			res.RemovedChannels = w.channelList()
			res.Graph = &Graph{Nodes: []Node{}, Edges: [][2]int{}}
			return res, nil
		}
	}
	var errs []error
	for _, version := range opts.Releases {
		d := w.find(version)
		if d < 0 {
			res.NotFound = append(res.NotFound, version)
			continue
		}
		if opts.Truncate {
			removed, channels, err := w.truncate(d, opts.DefaultChannel)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			res.Removed = append(res.Removed, removed...)
			res.RemovedChannels = append(res.RemovedChannels, channels...)
		}
		w.nodes[d].Metadata = maps.Clone(w.nodes[d].Metadata)
		if w.nodes[d].Metadata == nil {
			w.nodes[d].Metadata = map[string]string{}
		}
		msg := opts.Message
		if msg == "" {
			msg = fmt.Sprintf("Release %s is deprecated.", version)
		}
		w.nodes[d].Metadata[DeprecatedKey] = msg
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.Graph = w.graph()
	return res, nil
}

// workGraph is a graph being edited: nodes are marked removed, not
// dropped, so indices stay stable until graph() compacts them.
type workGraph struct {
	nodes    []Node
	removed  []bool
	channels [][]string
	edges    map[[2]int]bool
	// named is false for a graph without channel metadata, which is
	// handled as one unnamed channel.
	named bool
	cond  []byte
}

func newWorkGraph(g *Graph) *workGraph {
	w := &workGraph{
		nodes:    slices.Clone(g.Nodes),
		removed:  make([]bool, len(g.Nodes)),
		channels: make([][]string, len(g.Nodes)),
		edges:    map[[2]int]bool{},
		named:    g.HasChannels(),
		cond:     g.ConditionalEdges,
	}
	for i, n := range g.Nodes {
		w.channels[i] = n.Channels()
		if !w.named {
			w.channels[i] = []string{""}
		}
	}
	for _, e := range g.Edges {
		w.edges[e] = true
	}
	return w
}

func (w *workGraph) find(version string) int {
	for i, n := range w.nodes {
		if n.Version == version && !w.removed[i] {
			return i
		}
	}
	return -1
}

func (w *workGraph) live() []int {
	var out []int
	for i := range w.nodes {
		if !w.removed[i] {
			out = append(out, i)
		}
	}
	return out
}

func (w *workGraph) versions(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = w.nodes[id].Version
	}
	return out
}

func (w *workGraph) channelList() []string {
	var out []string
	for _, i := range w.live() {
		for _, c := range w.channels[i] {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// heads lists the live nodes of channel that update to nothing in it.
func (w *workGraph) heads(channel string) []int {
	var heads []int
	for _, i := range w.live() {
		if !slices.Contains(w.channels[i], channel) {
			continue
		}
		head := true
		for e := range w.edges {
			if e[0] == i && !w.removed[e[1]] && slices.Contains(w.channels[e[1]], channel) {
				head = false
				break
			}
		}
		if head {
			heads = append(heads, i)
		}
	}
	slices.Sort(heads)
	return heads
}

// removeEverything handles AllowChannelRemoval: when a listed release
// heads the default channel, every channel's head must be listed, and then
// the whole graph goes. It reports whether it did.
func (w *workGraph) removeEverything(opts DeprecateOptions) (bool, error) {
	listed := func(i int) bool { return slices.Contains(opts.Releases, w.nodes[i].Version) }
	headsDefault := false
	for _, h := range w.heads(opts.DefaultChannel) {
		headsDefault = headsDefault || listed(h)
	}
	if !headsDefault {
		return false, nil
	}
	var missing []string
	for _, c := range w.channelList() {
		for _, h := range w.heads(c) {
			if !listed(h) {
				missing = append(missing, fmt.Sprintf("%s, the head of channel %q", w.nodes[h].Version, c))
			}
		}
	}
	if len(missing) > 0 {
		return false, fmt.Errorf("%w: removing the default channel %q removes every channel, so list every channel's head; missing %s",
			ErrRemovingDefaultChannel, opts.DefaultChannel, strings.Join(missing, "; "))
	}
	return true, nil
}

// truncate removes d's tail, the releases that reach d, from the channels
// they share with d, and the channels d heads. It changes nothing when
// that would remove the default channel's head.
func (w *workGraph) truncate(d int, defaultChannel string) (removed, removedChannels []string, err error) {
	tail := w.tail(d)
	inTail := map[int]bool{d: true}
	for _, t := range tail {
		inTail[t] = true
	}
	for _, h := range w.heads(defaultChannel) {
		if inTail[h] && w.named {
			return nil, nil, fmt.Errorf("%w: deprecating %s with truncation would remove %s, the head of the default channel %q",
				ErrRemovingDefaultChannel, w.nodes[d].Version, w.nodes[h].Version, defaultChannel)
		}
	}
	var headed []string
	for _, c := range w.channels[d] {
		if slices.Contains(w.heads(c), d) {
			headed = append(headed, c)
		}
	}
	shared := w.channels[d]
	for _, t := range tail {
		var keep []string
		for _, c := range w.channels[t] {
			if !slices.Contains(shared, c) || w.branchesIn(t, c, inTail) {
				keep = append(keep, c)
			}
		}
		w.channels[t] = keep
		if len(keep) == 0 {
			w.removed[t] = true
			removed = append(removed, w.nodes[t].Version)
		}
	}
	for e := range w.edges {
		if e[1] == d || w.removed[e[0]] || w.removed[e[1]] ||
			(inTail[e[0]] && inTail[e[1]] && !w.shareChannel(e[0], e[1])) {
			delete(w.edges, e)
		}
	}
	if w.named {
		for _, c := range headed {
			for i := range w.channels {
				w.channels[i] = slices.DeleteFunc(w.channels[i], func(x string) bool { return x == c })
			}
			removedChannels = append(removedChannels, c)
		}
	}
	return removed, removedChannels, nil
}

// tail lists, nearest first, every live release that reaches d.
func (w *workGraph) tail(d int) []int {
	seen := map[int]bool{d: true}
	var out []int
	queue := []int{d}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		var preds []int
		for e := range w.edges {
			if e[1] == n && !w.removed[e[0]] && !seen[e[0]] {
				preds = append(preds, e[0])
			}
		}
		slices.Sort(preds)
		for _, p := range preds {
			seen[p] = true
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out
}

// branchesIn reports whether t updates, in channel c, to a release outside
// the tail: t is a branch point that c still needs.
func (w *workGraph) branchesIn(t int, c string, inTail map[int]bool) bool {
	for e := range w.edges {
		if e[0] == t && !inTail[e[1]] && !w.removed[e[1]] && slices.Contains(w.channels[e[1]], c) {
			return true
		}
	}
	return false
}

func (w *workGraph) shareChannel(a, b int) bool {
	for _, c := range w.channels[a] {
		if slices.Contains(w.channels[b], c) {
			return true
		}
	}
	return false
}

// graph compacts the work graph back into a Graph, edges in index order.
func (w *workGraph) graph() *Graph {
	g := &Graph{Nodes: []Node{}, Edges: [][2]int{}, ConditionalEdges: w.cond}
	index := map[int]int{}
	for _, i := range w.live() {
		n := w.nodes[i]
		n.Metadata = maps.Clone(n.Metadata)
		if w.named {
			n.setChannels(w.channels[i])
		}
		index[i] = len(g.Nodes)
		g.Nodes = append(g.Nodes, n)
	}
	for e := range w.edges {
		if from, ok := index[e[0]]; ok {
			if to, ok := index[e[1]]; ok {
				g.Edges = append(g.Edges, [2]int{from, to})
			}
		}
	}
	slices.SortFunc(g.Edges, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	return g
}
