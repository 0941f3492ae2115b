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

// workGraph is a graph being edited: nodes, edges and channels are marked
// removed, not dropped, so indices stay stable until graph() compacts
// them. Each node knows its edges in and out, and each channel its
// members, so that a truncation costs what its tail holds, not what the
// whole graph holds.
type workGraph struct {
	nodes     []Node
	removed   []bool
	byVersion map[string]int

	edges    [][2]int
	edgeGone []bool
	// out and in list the ids of each node's edges.
	out, in [][]int

	// Channels have ids; a node's list keeps its metadata's order.
	channels     [][]int
	channelNames []string
	channelIDs   map[string]int
	channelGone  []bool
	members      [][]int
	// isMember holds node<<32|channel for each channel a node is in;
	// a node leaving a channel is taken out of it.
	isMember map[uint64]bool
	// named is false for a graph without channel metadata, which is
	// handled as one unnamed channel.
	named       bool
	cond        []byte
	conditional []ConditionalEdge

	// inTail marks the current truncation's tail, cleared after each.
	inTail []bool
}

func newWorkGraph(g *Graph) *workGraph {
	n := len(g.Nodes)
	w := &workGraph{
		nodes:       slices.Clone(g.Nodes),
		removed:     make([]bool, n),
		byVersion:   make(map[string]int, n),
		out:         make([][]int, n),
		in:          make([][]int, n),
		channels:    make([][]int, n),
		channelIDs:  map[string]int{},
		isMember:    map[uint64]bool{},
		named:       g.HasChannels(),
		cond:        g.ConditionalEdges,
		conditional: g.Conditional,
		inTail:      make([]bool, n),
	}
	for i, node := range g.Nodes {
		if _, dup := w.byVersion[node.Version]; !dup {
			w.byVersion[node.Version] = i
		}
		names := []string{""}
		if w.named {
			names = node.Channels()
		}
		for _, c := range names {
			id, ok := w.channelIDs[c]
			if !ok {
				id = len(w.channelNames)
				w.channelIDs[c] = id
				w.channelNames = append(w.channelNames, c)
				w.members = append(w.members, nil)
			}
			w.channels[i] = append(w.channels[i], id)
			w.members[id] = append(w.members[id], i)
			w.isMember[memberKey(i, id)] = true
		}
	}
	w.channelGone = make([]bool, len(w.channelNames))
	seen := make(map[[2]int]bool, len(g.Edges))
	for _, e := range g.Edges {
		if seen[e] {
			continue
		}
		seen[e] = true
		id := len(w.edges)
		w.edges = append(w.edges, e)
		w.out[e[0]] = append(w.out[e[0]], id)
		w.in[e[1]] = append(w.in[e[1]], id)
	}
	w.edgeGone = make([]bool, len(w.edges))
	return w
}

func memberKey(node, channel int) uint64 { return uint64(node)<<32 | uint64(channel) }

// channelID returns the id of a channel, or -1 when no node names it.
func (w *workGraph) channelID(name string) int {
	if id, ok := w.channelIDs[name]; ok {
		return id
	}
	return -1
}

// inChannel reports whether live node i is in channel c.
func (w *workGraph) inChannel(i, c int) bool {
	return c >= 0 && !w.removed[i] && !w.channelGone[c] && w.isMember[memberKey(i, c)]
}

// liveChannels lists the channels node i is still in.
func (w *workGraph) liveChannels(i int) []int {
	var out []int
	for _, c := range w.channels[i] {
		if w.inChannel(i, c) {
			out = append(out, c)
		}
	}
	return out
}

func (w *workGraph) find(version string) int {
	if i, ok := w.byVersion[version]; ok && !w.removed[i] {
		return i
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

// channelList lists, sorted, the channels some live node is still in.
func (w *workGraph) channelList() []string {
	var out []string
	for c, members := range w.members {
		if slices.ContainsFunc(members, func(i int) bool { return w.inChannel(i, c) }) {
			out = append(out, w.channelNames[c])
		}
	}
	slices.Sort(out)
	return out
}

// isHead reports whether node i is in channel c and updates to nothing
// else in it.
func (w *workGraph) isHead(i, c int) bool {
	if !w.inChannel(i, c) {
		return false
	}
	for _, e := range w.out[i] {
		if !w.edgeGone[e] && w.inChannel(w.edges[e][1], c) {
			return false
		}
	}
	return true
}

// heads lists the live nodes of channel that update to nothing in it.
func (w *workGraph) heads(channel string) []int {
	c := w.channelID(channel)
	if c < 0 {
		return nil
	}
	var heads []int
	for _, i := range w.members[c] {
		if w.isHead(i, c) {
			heads = append(heads, i)
		}
	}
	return heads
}

// removeEverything handles AllowChannelRemoval: when a listed release
// heads the default channel, every channel's head must be listed, and then
// the whole graph goes. It reports whether it did.
func (w *workGraph) removeEverything(opts DeprecateOptions) (bool, error) {
	listed := map[string]bool{}
	for _, v := range opts.Releases {
		listed[v] = true
	}
	if !slices.ContainsFunc(w.heads(opts.DefaultChannel), func(h int) bool { return listed[w.nodes[h].Version] }) {
		return false, nil
	}
	var missing []string
	for _, c := range w.channelList() {
		for _, h := range w.heads(c) {
			if !listed[w.nodes[h].Version] {
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
	touched := append(slices.Clip(tail), d)
	for _, t := range touched {
		w.inTail[t] = true
	}
	defer func() {
		for _, t := range touched {
			w.inTail[t] = false
		}
	}()
	if w.named {
		// The least such head, as a scan of the channel's heads in order
		// would name.
		def := w.channelID(defaultChannel)
		head := -1
		for _, t := range touched {
			if w.isHead(t, def) && (head < 0 || t < head) {
				head = t
			}
		}
		if head >= 0 {
			return nil, nil, fmt.Errorf("%w: deprecating %s with truncation would remove %s, the head of the default channel %q",
				ErrRemovingDefaultChannel, w.nodes[d].Version, w.nodes[head].Version, defaultChannel)
		}
	}
	shared := w.liveChannels(d)
	var headed []int
	for _, c := range shared {
		if w.isHead(d, c) {
			headed = append(headed, c)
		}
	}
	for _, t := range tail {
		var keep []int
		for _, c := range w.liveChannels(t) {
			if w.inChannel(d, c) && !w.branchesIn(t, c) {
				delete(w.isMember, memberKey(t, c))
				continue
			}
			keep = append(keep, c)
		}
		w.channels[t] = keep
		if len(keep) == 0 {
			w.removed[t] = true
			removed = append(removed, w.nodes[t].Version)
		}
	}
	// Every edge that changes touches d or its tail.
	for _, t := range touched {
		for _, ids := range [][]int{w.in[t], w.out[t]} {
			for _, e := range ids {
				from, to := w.edges[e][0], w.edges[e][1]
				if to == d || w.removed[from] || w.removed[to] ||
					(w.inTail[from] && w.inTail[to] && !w.shareChannel(from, to)) {
					w.edgeGone[e] = true
				}
			}
		}
	}
	if w.named {
		for _, c := range headed {
			w.channelGone[c] = true
			removedChannels = append(removedChannels, w.channelNames[c])
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
		for _, e := range w.in[n] {
			if from := w.edges[e][0]; !w.edgeGone[e] && !w.removed[from] && !seen[from] {
				preds = append(preds, from)
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
func (w *workGraph) branchesIn(t, c int) bool {
	for _, e := range w.out[t] {
		to := w.edges[e][1]
		if !w.edgeGone[e] && !w.inTail[to] && w.inChannel(to, c) {
			return true
		}
	}
	return false
}

func (w *workGraph) shareChannel(a, b int) bool {
	for _, c := range w.channels[a] {
		if w.isMember[memberKey(a, c)] && w.isMember[memberKey(b, c)] && !w.channelGone[c] {
			return true
		}
	}
	return false
}

// graph compacts the work graph back into a Graph, edges in index order.
func (w *workGraph) graph() *Graph {
	g := &Graph{Nodes: []Node{}, Edges: [][2]int{}, ConditionalEdges: w.cond, Conditional: w.conditional}
	index := make([]int, len(w.nodes))
	for i := range w.nodes {
		if w.removed[i] {
			continue
		}
		n := w.nodes[i]
		n.Metadata = maps.Clone(n.Metadata)
		if w.named {
			var names []string
			for _, c := range w.liveChannels(i) {
				names = append(names, w.channelNames[c])
			}
			n.setChannels(names)
		}
		index[i] = len(g.Nodes)
		g.Nodes = append(g.Nodes, n)
	}
	for i := range w.nodes {
		if w.removed[i] {
			continue
		}
		first := len(g.Edges)
		for _, e := range w.out[i] {
			if to := w.edges[e][1]; !w.edgeGone[e] && !w.removed[to] {
				g.Edges = append(g.Edges, [2]int{index[i], index[to]})
			}
		}
		slices.SortFunc(g.Edges[first:], func(a, b [2]int) int { return a[1] - b[1] })
	}
	return g
}
