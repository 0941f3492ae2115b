package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/atomicfile"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

func newUpdateGraphCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update-graph",
		Short: "Inspect and edit release update graphs (Cincinnati JSON)",
		Long: `update-graph reads and edits release update graphs in the Cincinnati JSON
format: "nodes" (version, payload, metadata) and "edges" (index pairs from a
release to one it updates to). A node's channels are its metadata key
` + updategraph.ChannelsKey + ` (comma-separated);
a deprecated release carries ` + updategraph.DeprecatedKey + `
with the message clusters on it are shown. The operator reads the same
graph from spec.upstream or --update-graph.

A graph is refused when it is malformed, names a version twice, gives a
key twice or is over one of the caps on its size, nodes, edges and
strings (see docs/operations.md); an edge listed twice is kept once, with
a note.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDeprecateCommand(), newValidateGraphCommand(), newShowGraphCommand())
	return cmd
}

// graphSource is the --update-graph file of start and apply, nil when
// unset so that the operator reads spec.upstream.
func graphSource(path string) updategraph.Source {
	if path == "" {
		return nil
	}
	return updategraph.FileSource{Path: path}
}

// readGraph reads and parses the graph file at path; its errors are usage
// errors, as the graph is the command's input. Edges listed more than
// once are merged, with a note on stderr.
func readGraph(cmd *cobra.Command, path string) (*updategraph.Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, withExitCode(exitUsage, err)
	}
	defer f.Close()
	g, err := updategraph.Parse(f)
	if err != nil {
		return nil, withExitCode(exitUsage, fmt.Errorf("%s: %w", path, err))
	}
	if g.DuplicateEdges > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s lists %d edges more than once; each is kept once\n", path, g.DuplicateEdges)
	}
	return g, nil
}

type deprecateOptions struct {
	updategraph.DeprecateOptions
	output string
}

func newDeprecateCommand() *cobra.Command {
	o := &deprecateOptions{}
	cmd := &cobra.Command{
		Use:   "deprecate GRAPH --release V [--release V2...] [--truncate --default-channel NAME] [--output FILE]",
		Short: "Mark releases deprecated and optionally truncate the graph behind them",
		Long: `deprecate marks each --release deprecated: clusters may update away from a
deprecated release, but the operator never installs it or offers it as an
update. Releases are handled in the order given; one not in the graph (or
already removed by an earlier one) is skipped with a note.

With --truncate it also follows opm's deprecatetruncate: the releases that
update into a deprecated one (its tail) leave the channels they share with
it, and go when they are in no other channel and nothing outside the tail
updates from them (a branch point stays); nothing updates into the
deprecated release any more, which stays as something to update from; a
channel it heads is removed. Clusters on a removed release see
RetrievedUpdates=False, VersionNotFound. The head of --default-channel is
never removed, unless --allow-channel-removal is given and every channel's
head is listed, which removes the whole graph.

The input is never edited: the new graph goes to stdout, or to --output.
On any error nothing is written and the exit code is 1.

Exit codes: 0 written; 1 the deprecation was refused; 2 usage errors or an
unreadable graph.`,
		Example: `  payload-applier update-graph deprecate graph.json --release 4.20.3 > new.json
  payload-applier update-graph deprecate graph.json --release 4.20.3 --truncate --default-channel stable-4.20 -o new.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	flags := cmd.Flags()
	flags.StringArrayVar(&o.Releases, "release", nil, "release version to deprecate; repeat for several (required)")
	flags.BoolVar(&o.Truncate, "truncate", false, "also remove the releases behind each deprecated one")
	flags.StringVar(&o.DefaultChannel, "default-channel", "", "the channel clusters install from; its head is never removed (required with --truncate when nodes name channels)")
	flags.BoolVar(&o.AllowChannelRemoval, "allow-channel-removal", false, "allow removing every channel when the default channel's head and every other head are listed")
	flags.StringVar(&o.Message, "message", "", `deprecation message shown to clusters; default "Release V is deprecated."`)
	flags.StringVarP(&o.output, "output", "o", "", "write the new graph to this file instead of stdout")
	_ = cmd.MarkFlagRequired("release")
	return cmd
}

func (o *deprecateOptions) run(cmd *cobra.Command, path string) error {
	if o.AllowChannelRemoval && !o.Truncate {
		return withExitCode(exitUsage, errors.New("--allow-channel-removal needs --truncate: without it nothing is removed"))
	}
	g, err := readGraph(cmd, path)
	if err != nil {
		return err
	}
	res, err := updategraph.Deprecate(g, o.DeprecateOptions)
	if err != nil {
		return withExitCode(exitFailed, fmt.Errorf("nothing was written: %w", err))
	}
	var buf bytes.Buffer
	if err := res.Graph.Encode(&buf); err != nil {
		return err
	}
	if err := writeOutput(cmd.OutOrStdout(), o.output, buf.Bytes()); err != nil {
		return withExitCode(exitFailed, err)
	}
	report := cmd.ErrOrStderr()
	for _, v := range res.NotFound {
		fmt.Fprintf(report, "note: %s is not in the graph (unknown, or already removed); skipped\n", v)
	}
	if len(res.Removed) > 0 {
		fmt.Fprintf(report, "removed releases: %s\n", strings.Join(res.Removed, ", "))
	}
	if len(res.RemovedChannels) > 0 {
		fmt.Fprintf(report, "removed channels: %s\n", strings.Join(res.RemovedChannels, ", "))
	}
	for _, e := range res.Graph.Validate() {
		fmt.Fprintf(report, "warning: %v\n", e)
	}
	return nil
}

// writeOutput writes data to w, or atomically to the file path: a failed
// write leaves no partial file behind.
func writeOutput(w io.Writer, path string, data []byte) error {
	if path == "" {
		_, err := w.Write(data)
		return err
	}
	// 0600, the mode the output has always had (os.CreateTemp's).
	return atomicfile.Write(path, data, 0o600)
}

func newValidateGraphCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate GRAPH",
		Short: "Check a graph: one head per channel, no cycles, every release reaching the head",
		Long: `validate checks every channel of the graph (the whole graph when no node
names a channel): it has no cycle and exactly one head, the release that
updates to nothing else in the channel, so every release reaches it.

Exit codes: 0 valid; 1 problems found, each on a line; 2 an unreadable or
malformed graph.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := readGraph(cmd, args[0])
			if err != nil {
				return err
			}
			errs := g.Validate()
			for _, e := range errs {
				fmt.Fprintln(cmd.OutOrStdout(), e)
			}
			if len(errs) > 0 {
				return withExitCode(exitFailed, fmt.Errorf("%s: %d problem(s)", args[0], len(errs)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d releases, %d edges, valid\n", args[0], len(g.Nodes), len(g.Edges))
			return nil
		},
	}
}

func newShowGraphCommand() *cobra.Command {
	var channel string
	cmd := &cobra.Command{
		Use:   "show GRAPH [--channel C]",
		Short: "List a graph's releases with their channels, updates and deprecation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := readGraph(cmd, args[0])
			if err != nil {
				return err
			}
			if channel != "" {
				g = g.InChannel(channel)
			}
			// Each release's updates gathered in one pass over the edges.
			to := make([][]string, len(g.Nodes))
			for _, e := range g.Edges {
				to[e[0]] = append(to[e[0]], g.Nodes[e[1]].Version)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tCHANNELS\tUPDATES TO\tDEPRECATED")
			for i, n := range g.Nodes {
				dep := "-"
				if msg, ok := n.Deprecation(); ok {
					dep = "yes: " + msg
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Version, dashIfEmpty(strings.Join(n.Channels(), ",")), dashIfEmpty(strings.Join(to[i], ",")), dep)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&channel, "channel", "", "show only this channel")
	return cmd
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
