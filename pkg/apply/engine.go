// Package apply creates, updates and deletes the objects of a release
// payload. It is the only package that writes to the cluster's payload
// objects, and it is the one engine behind both `payload-applier apply` and
// the operator. Every DELETE it sends, a delete manifest's or an operand
// cleanup's, goes through pass.send and its one safety gate (safety.go).
package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// deleteParallelism bounds concurrent delete chains. Deletes are few, and each
// chain waits on its own objects, so a small pool keeps API load low.
const deleteParallelism = 8

// DefaultStuckAfter is how long a delete, or an operand cleanup, may go
// without progress before it is reported stuck or stalled: long enough for
// a finalizer's controller to act, short enough to reach an admin in a
// maintenance window.
const DefaultStuckAfter = 10 * time.Minute

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "payload-applier"

// Config wires an Engine to a cluster.
type Config struct {
	// Dynamic is the client for every payload object.
	Dynamic dynamic.Interface
	// REST, when set, sends the DELETEs, so that the engine reads the
	// answer: the apiserver says in it whether the object is already gone,
	// which spares a read per delete. Any client of the cluster serves, as
	// paths are absolute. Without it, the engine reads the object again.
	REST rest.Interface
	// Mapper resolves kinds to resources. It is reset when a kind does not
	// resolve, so that a custom resource applies once its CRD is Established.
	Mapper meta.ResettableRESTMapper
	// Discovery, when set, lists the namespaced resources, so that a
	// Namespace delete can say what it takes with it (Contents).
	Discovery discovery.DiscoveryInterface
	// Ledger persists delete records across restarts.
	Ledger deletion.Store
	// CleanupStore persists operand cleanups across restarts; default in
	// memory.
	CleanupStore cleanup.Store
	// Self names the applier's own objects, which are never deleted.
	// Zero fields take DefaultSelf's values.
	Self Self
	// Recorder, when set, receives Kubernetes Events about deletes and
	// failures, attached to EventObject.
	Recorder    record.EventRecorder
	EventObject runtime.Object
	// Clock defaults to the real clock.
	Clock clock.Clock
	// OnDelete, when set, is told of every delete transition the ledger
	// records, in passes and between them, for metrics. It must not block.
	OnDelete func(deletion.Transition, deletion.Record)
	// Metadata, when set, lets WatchLive watch the metadata of what the
	// engine applies (liveVersions).
	Metadata metadata.Interface
	// Budget limits the requests of the clients NewForConfig builds, by
	// the mode of the pass; zero leaves the rest.Config's limit.
	Budget Budget

	// limiter is the Budget's, set by NewForConfig in the clients it builds.
	limiter *budgetLimiter
}

// Engine applies releases. It is safe for one Sync at a time; Deletes may be
// called concurrently with a Sync.
type Engine struct {
	dynamic   dynamic.Interface
	rest      rest.Interface
	discovery discovery.DiscoveryInterface
	mapper    *mapper
	ledger    *deletion.Ledger
	cleanups  *recordstore.Ledger[cleanup.Record]
	protected map[payload.ObjectID]string
	recorder  record.EventRecorder
	eventObj  runtime.Object
	clock     clock.Clock
	onDelete  func(deletion.Transition, deletion.Record)
	limiter   *budgetLimiter
	metadata  metadata.Interface
	// operatorWaits times the ClusterOperators short of healthy.
	operatorWaits operatorWaits

	// applied remembers, per object, the manifest hash and the
	// resourceVersion our last write produced, so a resync can skip the
	// comparison when nothing has touched the object since.
	appliedMu sync.Mutex
	applied   map[payload.ObjectID]appliedState
	// live, once WatchLive is called, tells a resync which applied
	// objects changed since.
	live *liveVersions
	// undeclared holds, per object, manifest fields its schema rejects.
	undeclared map[payload.ObjectID][]string
	// typedCreates are the kinds created through their Go types:
	// payload.TypedCreateKinds, and those whose manifests the server
	// refused as they stand, so that the next object of the kind is
	// created that way at once.
	typedCreates map[schema.GroupKind]bool
	// established holds, per kind, when the CRD this engine last saw
	// become Established did, for createHeld.
	established map[schema.GroupKind]time.Time

	// stuckReported keeps Events about stuck deletes to one per object.
	stuckMu       sync.Mutex
	stuckReported map[payload.ObjectID]bool
}

type appliedState struct {
	hash            uint64
	resourceVersion string
	gvr             schema.GroupVersionResource
	healthy         bool
}

// New validates cfg and returns an Engine.
func New(cfg Config) (*Engine, error) {
	var errs []error
	if cfg.Dynamic == nil {
		errs = append(errs, errors.New("Config.Dynamic is required"))
	}
	if cfg.Mapper == nil {
		errs = append(errs, errors.New("Config.Mapper is required"))
	}
	if cfg.Ledger == nil {
		errs = append(errs, errors.New("Config.Ledger is required"))
	}
	if cfg.Recorder != nil && cfg.EventObject == nil {
		errs = append(errs, errors.New("Config.EventObject is required with Config.Recorder"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("apply engine: %w", err)
	}
	cfg.Self = cfg.Self.WithDefaults()
	if cfg.CleanupStore == nil {
		cfg.CleanupStore = &cleanup.MemoryStore{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Engine{
		dynamic:       cfg.Dynamic,
		rest:          cfg.REST,
		discovery:     cfg.Discovery,
		mapper:        newMapper(cfg.Mapper, cfg.Clock),
		ledger:        deletion.NewLedger(cfg.Ledger),
		cleanups:      recordstore.NewLedger(cfg.CleanupStore, cleanup.RecordFormat),
		protected:     cfg.Self.Protected(),
		recorder:      cfg.Recorder,
		eventObj:      cfg.EventObject,
		clock:         cfg.Clock,
		onDelete:      cfg.OnDelete,
		limiter:       cfg.limiter,
		metadata:      cfg.Metadata,
		applied:       map[payload.ObjectID]appliedState{},
		undeclared:    map[payload.ObjectID][]string{},
		typedCreates:  typedCreateKinds(),
		established:   map[schema.GroupKind]time.Time{},
		stuckReported: map[payload.ObjectID]bool{},
	}, nil
}

// SyncOptions tune one pass. Zero values take the mode's defaults.
type SyncOptions struct {
	Mode graph.Mode
	// Attempt seeds the reconcile permutation.
	Attempt int
	// Parallelism bounds concurrent graph nodes; 0 takes the mode's default
	// (update 16, reconcile 2, install one worker per node, at most 32).
	Parallelism int
	// StrictOrder applies each component's manifests one at a time, as the
	// CVO does, instead of in waves.
	StrictOrder bool
	// Backoff retries a failing task. Default: update and reconcile
	// {10s, ×1.3, 3 steps, cap 15s}; install {500ms, ×1.5, 8 steps}: an
	// install runs every component at once, so a manifest often waits a
	// moment for a namespace or CRD that another component creates, and
	// 16s of patience, retried early, spares a second pass. A try refused
	// for a missing namespace or kind is retried as soon as it appears.
	Backoff *wait.Backoff
	// DeleteSettle is how long a just-issued delete is watched for the
	// object to vanish before the next delete in its chain waits for a later
	// pass. Default 5s.
	DeleteSettle time.Duration
	// EstablishTimeout bounds the wait for a CRD to become Established.
	// Default 30s.
	EstablishTimeout time.Duration
	// StuckAfter marks an in-progress delete as stuck. Default
	// DefaultStuckAfter.
	StuckAfter time.Duration
	// OperandCleanup is the admin's policy for the operands of components
	// the release removes; the zero value means Orphan.
	OperandCleanup cleanup.Policy
	// DegradedOperators is the admin's policy for a Degraded
	// ClusterOperator in updates and reconciles; the zero value means
	// DegradedBlock, the CVO's.
	DegradedOperators DegradedPolicy
	// Force marks a pass of an update the administrator forced: the CRD
	// compatibility findings force may override are Events instead of
	// failures (a removed stored version still fails).
	Force bool
	// Rollback marks a pass that moves the cluster to an older release:
	// no operand cleanup starts.
	Rollback bool
	// Events, when set, receives one event per finished task. Sends give up
	// when ctx is done.
	Events chan<- Event
}

func (o *SyncOptions) setDefaults() {
	if o.Mode == "" {
		o.Mode = graph.ModeUpdate
	}
	if o.Backoff == nil {
		b := wait.Backoff{Duration: 10 * time.Second, Factor: 1.3, Steps: 3, Cap: 15 * time.Second}
		if o.Mode == graph.ModeInstall {
			b = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Steps: 8}
		}
		o.Backoff = &b
	}
	if o.DeleteSettle == 0 {
		o.DeleteSettle = 5 * time.Second
	}
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = 30 * time.Second
	}
	if o.StuckAfter == 0 {
		o.StuckAfter = DefaultStuckAfter
	}
}

// Tasks turns a release's manifests into graph tasks, index for index,
// judging waves offline: no custom resource is known to be served.
func Tasks(rel *payload.Release) []*graph.Task {
	return tasksFor(rel, payload.NewWaveRule(rel, nil))
}

// tasksFor is Tasks with the wave rule waves.
func tasksFor(rel *payload.Release, waves *payload.WaveRule) []*graph.Task {
	tasks := make([]*graph.Task, len(rel.Manifests))
	for i, m := range rel.Manifests {
		tasks[i] = &graph.Task{
			Index:     i,
			File:      m.OriginalFilename,
			RunLevel:  m.RunLevel,
			Component: m.Component,
			Name:      m.ID().String(),
			Job:       m.GVK.GroupKind() == payload.JobKind,
			Delete:    m.Delete(),
			Passive:   waves.Passive(m),
		}
	}
	return tasks
}

// Sync applies rel once: the apply walk in graph order, then the delete walk
// in reverse order. It returns an error only when the pass could not start;
// task failures are in the result.
func (e *Engine) Sync(ctx context.Context, rel *payload.Release, opts SyncOptions) (*SyncResult, error) {
	opts.setDefaults()
	if e.limiter != nil {
		e.limiter.use(opts.Mode)
	}
	e.mapper.forget()
	ledgerErr := e.ledger.Load(ctx)
	var unreadable *deletion.UnreadableError
	if ledgerErr != nil && !errors.As(ledgerErr, &unreadable) {
		return nil, ledgerErr
	}
	cleanupErr := e.cleanups.Load(ctx)
	if cleanupErr != nil && !errors.As(cleanupErr, &unreadable) {
		return nil, cleanupErr
	}
	live := e.watched()
	live.startPending()
	if opts.Mode == graph.ModeReconcile {
		// A resync just after the watches started skips what they know
		// rather than read it all.
		live.awaitSynced(ctx, watchSettle)
	}
	p := newPass(e, rel, opts)
	defer p.stopNamespaceWatches()
	e.operatorWaits.begin(rel.Version + "/" + string(opts.Mode))
	if ledgerErr != nil {
		// Applies go ahead; no delete starts, and nothing overwrites the
		// ledger, until someone repairs it.
		return p.applyOnly(ctx, ledgerErr, cleanupErr), nil
	}
	// An unreadable cleanup state holds back only the components whose
	// operands it is about; it is never overwritten.
	p.cleanupErr = cleanupErr
	if cleanupErr == nil {
		// A retarget away from a removal stops its cleanup.
		e.cleanups.Prune(func(r cleanup.Record) bool {
			_, removed := p.candidates[r.Component]
			return !removed
		})
	}
	// Finished records of objects this release no longer marks serve no
	// pass again; dropping them keeps the ledger the size of one release.
	e.ledger.Retain(func(r deletion.Record) bool { return p.marked[r.ID] })
	if opts.Mode == graph.ModeUpdate {
		if err := p.claimDeletes(ctx); err != nil {
			return nil, err
		}
	}
	walks := p.run(ctx, true)
	if cleanupErr == nil {
		if err := e.cleanups.Flush(ctx); err != nil {
			e.warn("OperandCleanupNotSaved", fmt.Sprintf("The operand cleanup state could not be saved; the next pass tries again: %v", err))
		}
	}
	p.markUnrun(walks.Delete)
	p.trackOrphanedDeletes(ctx)
	if err := e.ledger.Flush(ctx); err != nil {
		// Memory stays right and the next pass saves again; meanwhile a
		// restart would only re-read from the cluster what was lost.
		e.warn("DeleteLedgerNotSaved", fmt.Sprintf("The delete ledger could not be saved; the next pass tries again: %v", err))
	}
	r := p.result(walks)
	r.CleanupErr = cleanupErr
	// Watches start once a pass completed: an install's retries would
	// otherwise list every resource while the install still runs.
	if opts.Mode == graph.ModeReconcile || r.Complete() {
		live.request(p.appliedResources(), opts.Mode == graph.ModeReconcile)
	}
	return r, nil
}

// run walks the pass: the apply walk, then, with deletes, the delete walk.
func (p *pass) run(ctx context.Context, deletes bool) graph.PassResult {
	tasks := tasksFor(p.rel, p.e.waveRule(p.rel))
	applyGraph := graph.Build(tasks, graph.BuildOptions{Mode: p.opts.Mode, Attempt: p.opts.Attempt, StrictOrder: p.opts.StrictOrder})
	parallelism := p.opts.Parallelism
	if parallelism == 0 {
		parallelism = graph.RecommendedParallelism(p.opts.Mode, applyGraph)
	}
	pass := graph.Pass{
		Apply:        applyGraph,
		ApplyFn:      p.applyTask,
		ApplyOptions: graph.RunOptions{Parallelism: parallelism, OnNodeStart: p.precreate},
	}
	if deletes {
		pass.Delete, pass.DeleteFn = graph.BuildDeletes(tasks, graph.BuildOptions{StrictOrder: p.opts.StrictOrder}), p.deleteTask
		pass.DeleteOptions = graph.RunOptions{Parallelism: deleteParallelism}
	}
	p.prefetchSnapshots(ctx)
	walks := graph.RunPass(ctx, pass)
	p.waitPrefetch()
	return walks
}

// applyOnly is a pass over an unreadable ledger: every apply runs, every
// delete is reported as not run, with why.
func (p *pass) applyOnly(ctx context.Context, ledgerErr, cleanupErr error) *SyncResult {
	walks := p.run(ctx, false)
	for i := range p.results {
		if r := &p.results[i]; r.Delete {
			r.Message = "not deleted: the delete ledger is unreadable"
		}
	}
	r := p.result(walks)
	r.LedgerErr, r.CleanupErr = ledgerErr, cleanupErr
	return r
}

// Deletes reports the ledger's deletes, for Upgradeable and status.
func (e *Engine) Deletes(ctx context.Context, stuckAfter time.Duration) (deletion.Summary, error) {
	if err := e.ledger.Load(ctx); err != nil {
		return deletion.Summary{}, err
	}
	if stuckAfter == 0 {
		stuckAfter = DefaultStuckAfter
	}
	return deletion.Summarize(e.ledger.All(), e.clock.Now(), stuckAfter), nil
}

// CarriedDeletes maps each object the ledger remembers to the releases
// whose delete manifests named it, for acceptance (deletion.Carriers).
func (e *Engine) CarriedDeletes(ctx context.Context) (map[payload.ObjectID][]string, error) {
	if err := e.ledger.Load(ctx); err != nil {
		return nil, err
	}
	return deletion.Carriers(e.ledger.All()), nil
}

// result assembles the pass's outcome.
func (p *pass) result(walks graph.PassResult) *SyncResult {
	r := &SyncResult{
		Release: p.rel.Version,
		Mode:    p.opts.Mode,
		Objects: p.results,
		Total:   p.total,
		Walks:   walks,
	}
	for _, o := range p.results {
		if o.Delete {
			continue
		}
		if o.Err != nil {
			r.Errors = append(r.Errors, o.Err)
		}
		if o.Action != ActionNotRun && o.Action != ActionFailed {
			// Reported trouble (payload.EffectReport) counts as done, as the CVO counts it.
			r.Done++
		}
	}
	r.Deletes = deletion.Summarize(p.e.ledger.All(), p.e.clock.Now(), p.opts.StuckAfter)
	r.Cleanups = p.e.cleanups.All()
	p.e.reportStuck(r.Deletes.Stuck, p.opts.StuckAfter)
	return r
}

// reportStuck sends one warning Event per delete that became stuck.
func (e *Engine) reportStuck(stuck []deletion.Record, after time.Duration) {
	e.stuckMu.Lock()
	defer e.stuckMu.Unlock()
	for _, r := range stuck {
		if e.stuckReported[r.ID] {
			continue
		}
		e.stuckReported[r.ID] = true
		e.take(deletion.Next(&r, deletion.Observation{Kind: deletion.Age, Now: e.clock.Now(), StuckAfter: after}))
	}
}

func typedCreateKinds() map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, gk := range payload.TypedCreateKinds {
		out[gk] = true
	}
	return out
}
