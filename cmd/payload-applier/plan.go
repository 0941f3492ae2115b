package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// planOptions are the flags of `payload-applier plan`.
type planOptions struct {
	payloadDir, kubeconfig, namespace string
	// payloads is the release store the current release is read from.
	payloads     string
	registry     registryFlags
	mode, output string
	strictOrder  bool
	inclusion    inclusionFlags
	// load are the filters the payload was loaded with.
	load payload.LoadOptions
	caps capabilityFlags
}

const planLong = `Plan shows what applying a release payload would do, and in which order,
without doing it.

The payload is loaded, filtered for --profile (default $CLUSTER_PROFILE)
without those --exclude-manifests (default $EXCLUDE_MANIFESTS) excludes,
and validated as 'apply' and 'start' do; an invalid payload exits 2 naming
each problem's file and line. --payload is a directory or a release image:

` + sourceRule + `

The output lists the nodes of the apply graph that --mode builds, then the
delete walk, then the manifests the inclusion filters skip.

Capabilities filter as in the operator: a manifest annotated
capability.openshift.io/name is kept only when each capability it names is
enabled. Offline, --baseline-capability-set (default vCurrent) and each
--capability name what is enabled. Against a cluster, the ClusterVersion
"version" does, as the operator resolves it: its spec (the flags, when given,
stand in for it) together with status.capabilities.enabledCapabilities, for a
capability once enabled stays enabled. In update mode plan also previews the
capabilities the update would enable implicitly, as the operator decides
them from the current release: read from --release-cache when the cluster
runs it from an image, or from the --payloads store. Without it, plan counts
a capability in front of which the payload puts an object that exists on the
cluster (an object created outside any release may then make the preview say
more than the operator will), and says so. Those capabilities count as
enabled in the plan.

Offline, the default, plan reads no cluster (not even the in-cluster config).
Actions: apply (create or update), delete (a delete manifest, in update mode)
and skip (a delete in install or reconcile mode, a delete of the applier's own
objects, or a manifest the filters drop; the reason says which).

With --kubeconfig or $KUBECONFIG, plan compares with the cluster, read-only:
  create           the object is missing, or its type is served by a CRD
                   earlier in the payload
  update           server-side apply would change it; the reason lists the
                   changed fields, from a server-side dry run
  unchanged        the object holds what the manifest sets, or it is
                   create-only and exists
  delete           a delete manifest's object exists; the reason says whether
                   it is terminating and which finalizers hold it, and for a
                   Namespace or CRD, how many objects per kind that the
                   payload does not manage go with it
  already-deleted  a delete manifest's object is gone
  skip             as offline; in reconcile mode a delete is issued only if an
                   update claimed it in the delete ledger (--namespace)
Against a cluster in update mode, plan also runs the operator's update
preconditions and says whether the payload would be accepted as an update of
the cluster's current release, and if not, why ("acceptance" in JSON; it is
not checked offline, in other modes, or when the payload is already the
cluster's target; before a release has completed, an install's checks run).
Against a cluster the payload is filtered with the feature set and enabled
feature gates of the cluster's FeatureGate "cluster", as the operator does;
--profile stays the profile.
It also lists the cluster's admin gates that await an admin's ack
("adminAcks"): the live ones in openshift-config-managed/admin-gates for the
current minor, which hold back a minor or major update ("blocks"), not the
payload's own, which apply only once it runs. When the update graph lists the
payload with known risks, "conditionalUpdate" gives them and its Recommended
condition as the operator's next pass would (only Always rules evaluated).
Plan never writes: it sends GETs, LISTs and, for drifted objects only, a
server-side apply with dryRun=All, which the apiserver does not persist.

--output json is a stable contract:
  {"release": "<version>", "mode": "<mode>",
   "image": "<registry/repository@sha256:...>", "verified": false,
   "acceptance": {"checked": <bool>, "accepted": <bool>, "message": "...",
                  "adminAcks": {"pending": [{"key": "ack-<x.y>-...", "version": "<x.y>",
                                "text": "...", "url": "..."}], "problems": ["..."],
                                "blocks": <bool>},
                  "conditionalUpdate": {"risks": [{"name": "...", "url": "..."}],
                                        "recommended": "True|False|Unknown", "reason": "...",
                                        "message": "..."}},
   "capabilities": {"enabled": [...], "implicitlyEnabled": [...],
                    "wouldImplicitlyEnable": [...], "message": "..."},
   "nodes": [
    {"id": 0, "after": [<ids of the nodes that must finish first>],
     "tasks": [{"file": "...", "line": 1, "group": "...", "version": "...",
                "kind": "...", "namespace": "...", "name": "...",
                "action": "...", "reason": "...", "wave": <n>}]}]}
Every key is always present (but "conditionalUpdate", absent without risks,
and "image" and "verified", absent for a directory: plan reads a release
image without verifying it, and says so), "after" and "tasks" are never
null, and "file"
is relative to the payload directory. A node's id is its position in "nodes":
  - first the apply graph's nodes, with the graph's ids. A node without tasks
    is a join that links parallel nodes.
  - then one node per chain of the delete walk, whose "after" lists every
    apply node without a successor: deletes start once the apply walk is
    over. A chain deletes in order, each wave once the one before it is
    gone; chains do not wait for each other.
  - last, if the filters skip any manifest, one node holds them all, with
    action "skip" and an empty "after": it never runs.
Together the nodes hold every manifest of the payload exactly once.
A node's tasks run in waves, numbered from 1 by "wave": the tasks of one wave
run at once, and a wave starts when the one before it is done (text heads
each wave of several tasks "wave N, K at once:" and indents its tasks). Consecutive passive
manifests of one component share a wave (ConfigMap, Secret, ServiceAccount,
Service, RBAC, PodDisruptionBudget, NetworkPolicy, and custom resources the
cluster already serves whose CRD is not in the payload; offline, no custom
resource); any other manifest is a barrier and has a wave of its own.
--strict-order gives every task a wave of its own, as the CVO runs them. In
the delete walk the waves run in reverse, each once the one before it is gone.

Exit codes: 0 the plan was made; 1 the cluster answered but a read failed;
2 usage errors, an invalid payload, or an unreachable cluster.`

const planExample = `  payload-applier plan --payload release/
  payload-applier plan --payload release/ --mode install --output dot | dot -Tsvg > plan.svg
  payload-applier plan --payload release/ --mode install --baseline-capability-set None --capability Console
  payload-applier plan --payload release/ --kubeconfig ~/.kube/config --output json`

func newPlanCommand() *cobra.Command { return (&planOptions{}).command() }

func (o *planOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plan --payload DIR|IMAGE [--kubeconfig F] [--mode install|update|reconcile] [--output text|json|dot] [--profile P] [--exclude-manifests X] [--baseline-capability-set S] [--capability C]...",
		Short:   "Show what applying a payload would do, in order, without changing anything",
		Long:    planLong,
		Example: planExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	flags := cmd.Flags()
	flags.StringVar(&o.payloadDir, "payload", "", "release payload directory or release image (required)")
	flags.StringVar(&o.kubeconfig, "kubeconfig", "", "compare with the cluster of this kubeconfig; default $KUBECONFIG; without either, plan offline")
	flags.StringVar(&o.namespace, "namespace", apply.DefaultSelf().Namespace, "namespace of the applier's delete ledger")
	flags.StringVar(&o.mode, "mode", string(graph.ModeUpdate), "pass to plan: install, update or reconcile")
	flags.StringVarP(&o.output, "output", "o", "text", "output format: text, json or dot (Graphviz)")
	addStrictOrder(cmd, &o.strictOrder)
	o.inclusion.add(cmd)
	o.registry.addPull(cmd)
	o.caps.add(cmd)
	cmd.Flags().StringVar(&o.payloads, "payloads", "", "release store, as for 'apply': where the cluster's current release is read from when it is not in --release-cache, to preview the capabilities an update enables implicitly as the operator does")
	_ = cmd.MarkFlagRequired("payload")
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command) error {
	if err := o.validate(); err != nil {
		return err
	}
	loadOpts, err := o.inclusion.loadOptions(cmd.Context())
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	o.load = *loadOpts
	dir, image, err := o.registry.payloadSource(cmd.Context(), cmd.ErrOrStderr(), o.payloadDir)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("cannot plan payload %s:\n%w", o.payloadDir, err))
	}
	rel, err := payload.Load(dir, o.load)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("cannot plan payload %s:\n%w", o.payloadDir, err))
	}
	opts := apply.PlanOptions{Mode: graph.Mode(o.mode), Self: apply.Self{Namespace: o.namespace}, StrictOrder: o.strictOrder}
	cfg, err := o.restConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	var plan *apply.Plan
	var caps planCapabilities
	acceptance := planAcceptance{Message: "not checked offline"}
	if cfg == nil {
		rel, caps = o.caps.offlineCapabilities(rel, loadOpts.AlwaysEnabled)
		plan = apply.PlanOffline(rel, opts)
	} else {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if plan, acceptance, caps, err = o.planLive(ctx, cfg, rel, opts); err != nil {
			return err
		}
	}
	doc := newPlanDoc(plan)
	doc.Acceptance = acceptance
	doc.Capabilities = caps
	if image != "" {
		doc.Image, doc.Verified = image, new(bool)
	}
	w := cmd.OutOrStdout()
	switch o.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case "dot":
		if image != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), unverifiedNotice(image))
		}
		_, err = io.WriteString(w, doc.dot())
	default:
		_, err = io.WriteString(w, doc.text(plan.Live))
	}
	return err
}

func (o *planOptions) validate() error {
	if err := checkOutput(o.output, "text", "json", "dot"); err != nil {
		return err
	}
	if !slices.Contains([]graph.Mode{graph.ModeInstall, graph.ModeUpdate, graph.ModeReconcile}, graph.Mode(o.mode)) {
		return withExitCode(exitUsage, fmt.Errorf("--mode must be install, update or reconcile, not %q", o.mode))
	}
	return o.caps.validate()
}

// restConfig returns nil, for an offline plan, unless --kubeconfig or
// $KUBECONFIG names a cluster. Unlike the other commands it never falls back
// to the in-cluster config or ~/.kube/config: a plan should not reach a
// cluster nobody named.
func (o *planOptions) restConfig() (*rest.Config, error) {
	path := cmp.Or(o.kubeconfig, os.Getenv("KUBECONFIG"))
	if path == "" {
		return nil, nil
	}
	cfg, err := fromKubeconfig(path)
	if err != nil {
		return nil, err
	}
	// Plans read every object of a payload: no client-side limit, as for
	// apply and start, but each request is bounded.
	cfg = operator.ClientConfig(cfg)
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	return cfg, nil
}

// planLive plans against the cluster of cfg, through an engine whose delete
// ledger is only ever loaded, and says whether an update would be accepted.
func (o *planOptions) planLive(ctx context.Context, cfg *rest.Config, rel *payload.Release, opts apply.PlanOptions) (*apply.Plan, planAcceptance, planCapabilities, error) {
	e, kube, cc, err := liveClients(cfg, opts.Self)
	if err != nil {
		return nil, planAcceptance{}, planCapabilities{}, err
	}
	if rel, err = liveInclusion(ctx, cc, rel, o.load); err != nil {
		return nil, planAcceptance{}, planCapabilities{}, planFailed(cfg.Host, err)
	}
	// Last: it narrows rel, whatever the filters before it kept.
	rel, caps, err := o.caps.liveCapabilities(ctx, cc, e, rel, opts.Mode, o.load, o.currentRelease)
	if err != nil {
		return nil, planAcceptance{}, planCapabilities{}, planFailed(cfg.Host, err)
	}
	plan, acceptance, err := planAgainst(ctx, cfg.Host, kube, cc, e, rel, opts)
	if err != nil {
		return nil, planAcceptance{}, planCapabilities{}, err
	}
	acceptance.AdminAcks, err = clusterAdminAcks(ctx, kube, cc, opts.Mode, rel.Version)
	return plan, acceptance, caps, err
}

// currentRelease reads the release the cluster runs, cv's status.desired,
// from what is at hand: the release cache, when cv names it by image, or
// the --payloads store. plan pulls nothing for it.
func (o *planOptions) currentRelease(cv *configv1.ClusterVersion) (*payload.Release, error) {
	d := cv.Status.Desired
	if ref, err := releaseimage.ParseRef(d.Image); err == nil && ref.ByDigest() {
		p, err := o.registry.puller()
		if err != nil {
			return nil, err
		}
		if e, ok := p.Cached(ref.Digest(), o.registry.platform); ok {
			return payload.Load(e.Dir, o.load)
		}
	}
	if o.payloads == "" {
		return nil, fmt.Errorf("release %s is not in the release cache, and no --payloads store is given", d.Version)
	}
	return (&operator.DirStore{Root: o.payloads}).Load(d.Version, o.load)
}

// liveClients checks that cfg's cluster answers, and returns the engine
// and the clients plan reads it through.
func liveClients(cfg *rest.Config, self apply.Self) (*apply.Engine, kubernetes.Interface, configclient.Interface, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, nil, withExitCode(exitUsage, err)
	}
	if _, err := disc.ServerVersion(); err != nil {
		return nil, nil, nil, withExitCode(exitUsage, fmt.Errorf("cluster %s unreachable: %w", cfg.Host, err))
	}
	// self names the ledger in --namespace; plan only ever loads it.
	e, err := apply.NewForConfig(cfg, apply.Config{
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		Self:   self,
	})
	if err != nil {
		return nil, nil, nil, withExitCode(exitUsage, err)
	}
	cc, err := configclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, withExitCode(exitUsage, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, withExitCode(exitUsage, err)
	}
	return e, kube, cc, nil
}

// planAgainst judges the update as the operator would, then plans through
// e with the CRD checks the judge made, so that each custom resource is
// listed once.
func planAgainst(ctx context.Context, host string, kube kubernetes.Interface, cc configclient.Interface, e *apply.Engine, rel *payload.Release, opts apply.PlanOptions) (*apply.Plan, planAcceptance, error) {
	_, crds, acceptance, err := judgeUpdate(ctx, kube, cc, e, rel, opts.Mode)
	if err != nil {
		return nil, planAcceptance{}, planFailed(host, err)
	}
	opts.CRDChecks = crds
	plan, err := e.Plan(ctx, rel, opts)
	if err != nil {
		return nil, planAcceptance{}, planFailed(host, err)
	}
	return plan, acceptance, nil
}

// planFailed exits 2 when the cluster is down or refuses the credentials,
// and 1 for any other failed read.
func planFailed(host string, err error) error {
	code := exitFailed
	if r := apply.ReasonFor(err); r == apply.ReasonClusterDown || r == apply.ReasonUnauthorized {
		code = exitUsage
	}
	return withExitCode(code, fmt.Errorf("plan against %s failed:\n%w", host, err))
}

// planAcceptance says whether the operator would accept the payload as an
// update of the cluster: part of the JSON contract.
type planAcceptance struct {
	// Checked is false offline, outside update mode, and when the payload
	// needs no acceptance (clusterversion.Verdict.NotChecked says why).
	Checked bool `json:"checked"`
	// Accepted is true when the preconditions pass, or only warn.
	Accepted bool `json:"accepted"`
	// Message says why it was not checked, or what the checks found.
	Message string `json:"message"`
	// AdminAcks are the cluster's admin gates awaiting an ack.
	AdminAcks planAdminAcks `json:"adminAcks"`
	// ConditionalUpdate is the target's entry among the conditional
	// updates, when the update graph lists it with risks.
	ConditionalUpdate *planConditional `json:"conditionalUpdate,omitempty"`
}

// judgeUpdate observes the cluster as the operator's next pass would
// (operator.Observe) and decides on rel as it would (clusterversion.Decide),
// without requesting it. It returns the CRD checks the observation made.
func judgeUpdate(ctx context.Context, kube kubernetes.Interface, cc configclient.Interface, e *apply.Engine, rel *payload.Release, mode graph.Mode) (clusterversion.Verdict, *apply.CRDChecks, planAcceptance, error) {
	if mode != graph.ModeUpdate {
		return clusterversion.Verdict{}, nil, planAcceptance{Message: fmt.Sprintf("not checked in %s mode", mode)}, nil
	}
	cv, err := readClusterVersion(ctx, cc)
	if err != nil {
		return clusterversion.Verdict{}, nil, planAcceptance{}, err
	}
	var deprecated map[string]string
	if cv != nil {
		// An unreachable graph leaves deprecation unjudged, as it leaves
		// the operator's last list; the updates are judged as the
		// operator's next pass lists them.
		deprecated = operator.ProjectUpdates(ctx, cv, rel.Version, e.DynamicClient())
	}
	obs, crds, err := operator.Observe(ctx, kube, cc, e, cv, rel, deprecated)
	if err != nil {
		return clusterversion.Verdict{}, nil, planAcceptance{}, err
	}
	v := clusterversion.Decide(obs, metav1.Now()).Verdict
	acceptance := acceptanceOf(v, rel.Version)
	if cv != nil {
		acceptance.ConditionalUpdate = conditionalFor(cv.Status.ConditionalUpdates, rel.Version)
	}
	return v, crds, acceptance, nil
}

// acceptanceOf words the verdict on target for plan.
func acceptanceOf(v clusterversion.Verdict, target string) planAcceptance {
	if !v.Checked {
		return planAcceptance{Message: "not checked: " + v.NotChecked}
	}
	move := fmt.Sprintf("an update from %s to %s", v.Current, target)
	if v.Install {
		move = fmt.Sprintf("%s, as an install (no release has completed yet),", target)
	}
	a := planAcceptance{Checked: true, Accepted: !v.Blocking, Message: move + " would be accepted"}
	switch {
	case v.Blocking && v.Forceable:
		a.Message = fmt.Sprintf("%s would be refused (force would accept it): %s", move, v.Message)
	case v.Blocking:
		a.Message = fmt.Sprintf("%s would be refused (force would not accept it either): %s", move, v.Message)
	case v.Summary != nil:
		a.Message = fmt.Sprintf("%s would be accepted with risks: %s", move, v.Message)
	}
	return a
}

// planDoc is the output of `plan -o json`, a contract other tools read: the
// keys are never renamed or dropped, and lists are never null. planLong
// documents it; text and dot render the same nodes.
type planDoc struct {
	Release      string           `json:"release"`
	Mode         string           `json:"mode"`
	Acceptance   planAcceptance   `json:"acceptance"`
	Capabilities planCapabilities `json:"capabilities"`
	Nodes        []planNode       `json:"nodes"`
	// Image and Verified are set for a release image, which plan reads
	// unverified.
	Image    string `json:"image,omitempty"`
	Verified *bool  `json:"verified,omitempty"`

	steps [][]int // the apply graph's Steps; apply node ids are positions in Nodes
}

type planNode struct {
	ID    int        `json:"id"`
	After []int      `json:"after"`
	Tasks []planTask `json:"tasks"`

	walk  string // walkApply, walkDelete or walkSkip
	label string // the tasks' run levels and components
}

type planTask struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Action    string `json:"action"`
	Reason    string `json:"reason"`
	// Wave numbers the task's wave in its node from 1: the tasks of one
	// wave run at once. 0 for a skipped manifest, which never runs.
	Wave    int    `json:"wave"`
	subject string // for text: Kind.group/namespace/name
}

// Walks, in the order their nodes appear; not part of the JSON contract.
const (
	walkApply  = "apply"
	walkDelete = "delete"
	walkSkip   = "skip"
)

// newPlanDoc lays the plan out as planLong describes: apply nodes with their
// graph ids, then delete chains after every apply sink, then the skipped.
func newPlanDoc(p *apply.Plan) planDoc {
	doc := planDoc{Release: p.Release, Mode: string(p.Mode), Nodes: []planNode{}, steps: p.Apply.Steps()}
	sinks := []int{}
	for _, n := range p.Apply.Nodes {
		doc.Nodes = append(doc.Nodes, graphNode(p, n, walkApply, append([]int{}, n.In...)))
		if len(n.Out) == 0 {
			sinks = append(sinks, n.ID)
		}
	}
	for _, n := range p.Deletes.Nodes {
		node := graphNode(p, n, walkDelete, append([]int{}, sinks...))
		node.ID = len(doc.Nodes)
		doc.Nodes = append(doc.Nodes, node)
	}
	if len(p.Skipped) > 0 {
		node := planNode{ID: len(doc.Nodes), After: []int{}, Tasks: []planTask{}, walk: walkSkip,
			label: "skipped by the inclusion filters"}
		for _, a := range p.Skipped {
			node.Tasks = append(node.Tasks, newPlanTask(a))
		}
		doc.Nodes = append(doc.Nodes, node)
	}
	return doc
}

func graphNode(p *apply.Plan, n *graph.Node, walk string, after []int) planNode {
	node := planNode{ID: n.ID, After: after, Tasks: []planTask{}, walk: walk, label: nodeLabel(p, n)}
	for w, wave := range n.Waves() {
		for _, t := range wave {
			task := newPlanTask(p.Actions[t.Index])
			task.Wave = w + 1
			node.Tasks = append(node.Tasks, task)
		}
	}
	return node
}

func newPlanTask(a apply.PlannedAction) planTask {
	m := a.Manifest
	return planTask{
		File: m.File, Line: m.Line,
		Group: m.GVK.Group, Version: m.GVK.Version, Kind: m.GVK.Kind,
		Namespace: m.Obj.GetNamespace(), Name: m.Obj.GetName(),
		Action: a.Action.Planned(), Reason: a.Reason,
		subject: m.ID().String(),
	}
}

// nodeLabel names a node by its tasks' run levels and components, in order
// and without repeats; a node without tasks is a join.
func nodeLabel(p *apply.Plan, n *graph.Node) string {
	if len(n.Tasks) == 0 {
		return "join"
	}
	var groups []string
	for _, t := range n.Tasks {
		m := p.Actions[t.Index].Manifest
		g := "unparsed"
		if m.RunLevel >= 0 && m.Component != "" {
			g = fmt.Sprintf("%02d-%s", m.RunLevel, m.Component)
		}
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
	}
	return strings.Join(groups, ", ")
}

// counts is "3 create, 1 update" for tasks, in the order actions first appear.
func counts(tasks []planTask) string {
	var order []string
	n := map[string]int{}
	for _, t := range tasks {
		if n[t.Action] == 0 {
			order = append(order, t.Action)
		}
		n[t.Action]++
	}
	parts := make([]string, len(order))
	for i, a := range order {
		parts[i] = fmt.Sprintf("%d %s", n[a], a)
	}
	return strings.Join(parts, ", ")
}

// text renders the plan for people: the apply walk by steps, then the
// delete walk, then the skipped manifests, one line per manifest.
func (d planDoc) text(live bool) string {
	var b strings.Builder
	all := d.tasks()
	where := "offline"
	if live {
		where = "against the cluster"
	}
	fmt.Fprintf(&b, "Release %s, %s mode, planned %s: %s: %s\n", d.Release, d.Mode, where, countNoun(len(all), "manifest"), counts(all))
	if d.Image != "" {
		b.WriteString(unverifiedNotice(d.Image) + "\n")
	}
	if !live {
		b.WriteString("Offline, \"apply\" stands for create, update or unchanged; pass --kubeconfig to compare with a cluster.\n")
	} else {
		fmt.Fprintf(&b, "Acceptance: %s\n", d.Acceptance.Message)
		if c := d.Acceptance.ConditionalUpdate; c != nil {
			writeConditional(&b, "Known risks of ", d.Release, c)
		}
		writeAdminAcks(&b, d.Acceptance.AdminAcks)
	}
	fmt.Fprintf(&b, "Capabilities: %s\n", d.Capabilities.summary())
	fmt.Fprintf(&b, "\nApply walk: %s in %s; the nodes of a step may run in parallel\n", countNoun(len(d.walk(walkApply)), "node"), countNoun(len(d.steps), "step"))
	for s, ids := range d.steps {
		fmt.Fprintf(&b, "step %d", s+1)
		if len(ids) > 1 {
			fmt.Fprintf(&b, ": %d nodes in parallel", len(ids))
		}
		b.WriteString("\n")
		for _, id := range ids {
			writeTextNode(&b, d.Nodes[id], true)
		}
	}
	if deletes := d.walk(walkDelete); len(deletes) > 0 {
		fmt.Fprintf(&b, "\nDelete walk, once the apply walk is over: %s in parallel, each deleting in order, wave by wave\n", countNoun(len(deletes), "chain"))
		for _, n := range deletes {
			writeTextNode(&b, n, false)
		}
	}
	for _, n := range d.walk(walkSkip) {
		fmt.Fprintf(&b, "\nSkipped by the inclusion filters: %s\n", countNoun(len(n.Tasks), "manifest"))
		writeTextNode(&b, n, false)
	}
	return b.String()
}

func writeTextNode(b *strings.Builder, n planNode, after bool) {
	fmt.Fprintf(b, "  node %d: %s", n.ID, n.label)
	if len(n.Tasks) > 0 {
		fmt.Fprintf(b, " (%s)", counts(n.Tasks))
	}
	waves := n.waveSizes()
	if waves != nil {
		fmt.Fprintf(b, " in %s", countNoun(len(waves), "wave"))
	}
	if after && len(n.After) > 0 {
		fmt.Fprintf(b, ", after %s", strings.ReplaceAll(strings.Trim(fmt.Sprint(n.After), "[]"), " ", ", "))
	}
	b.WriteString("\n")
	for i, t := range n.Tasks {
		// A shared wave gets a heading and its tasks an indent; a task
		// alone in its wave stays as in a serial node.
		indent := ""
		if waves != nil && waves[t.Wave-1] > 1 {
			indent = "  "
			if i == 0 || n.Tasks[i-1].Wave != t.Wave {
				fmt.Fprintf(b, "    wave %d, %d at once:\n", t.Wave, waves[t.Wave-1])
			}
		}
		fmt.Fprintf(b, "    %s%-15s  %s (%s:%d)", indent, t.Action, t.subject, t.File, t.Line)
		if t.Reason != "" {
			b.WriteString(": " + t.Reason)
		}
		b.WriteString("\n")
	}
}

// waveSizes counts the tasks of each wave of the node, or nil when every
// wave holds one task: the node runs one task at a time, as the CVO's.
func (n planNode) waveSizes() []int {
	var sizes []int
	shared := false
	for _, t := range n.Tasks {
		if t.Wave < 1 {
			return nil
		}
		for len(sizes) < t.Wave {
			sizes = append(sizes, 0)
		}
		sizes[t.Wave-1]++
		shared = shared || sizes[t.Wave-1] > 1
	}
	if !shared {
		return nil
	}
	return sizes
}

func (d planDoc) tasks() []planTask {
	var all []planTask
	for _, n := range d.Nodes {
		all = append(all, n.Tasks...)
	}
	return all
}

// walk returns the nodes of one walk, in id order.
func (d planDoc) walk(name string) []planNode {
	var out []planNode
	for _, n := range d.Nodes {
		if n.walk == name {
			out = append(out, n)
		}
	}
	return out
}

// dot renders the plan in Graphviz DOT: a box per node with its action
// counts, one cluster per walk, and a point that the apply walk's last
// nodes lead to and every delete chain starts from.
func (d planDoc) dot() string {
	var b strings.Builder
	all := d.tasks()
	fmt.Fprintf(&b, "digraph plan {\n  label=\"%s\";\n  labelloc=t;\n  rankdir=TB;\n",
		dotQuote(fmt.Sprintf("release %s, %s mode: %s", d.Release, d.Mode, counts(all))))
	clusters := []struct{ walk, label string }{
		{walkApply, "apply walk"},
		{walkDelete, "delete walk, once the apply walk is over"},
		{walkSkip, "skipped"},
	}
	for _, c := range clusters {
		nodes := d.walk(c.walk)
		if len(nodes) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  subgraph cluster_%s {\n    label=\"%s\";\n", c.walk, dotQuote(c.label))
		for _, n := range nodes {
			if len(n.Tasks) == 0 {
				fmt.Fprintf(&b, "    %d [ label=\"\" shape=\"point\" ];\n", n.ID)
				continue
			}
			fmt.Fprintf(&b, "    %d [ label=\"%s\" shape=\"box\" ];\n", n.ID, dotQuote(n.label+"\n"+counts(n.Tasks)))
		}
		b.WriteString("  }\n")
	}
	for _, n := range d.walk(walkApply) {
		for _, p := range n.After {
			fmt.Fprintf(&b, "  %d -> %d;\n", p, n.ID)
		}
	}
	if deletes := d.walk(walkDelete); len(deletes) > 0 && len(deletes[0].After) > 0 {
		b.WriteString("  applied [ label=\"\" shape=\"point\" ];\n")
		for _, p := range deletes[0].After {
			fmt.Fprintf(&b, "  %d -> applied;\n", p)
		}
		for _, n := range deletes {
			fmt.Fprintf(&b, "  applied -> %d;\n", n.ID)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// countNoun formats a count with its noun, plural unless the count is 1.
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func dotQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
