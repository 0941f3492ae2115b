package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// bench runs the measurements and collects their samples.
type bench struct {
	e    *env
	o    options
	res  *results
	work string
}

// Measurement IDs, in report order.
const (
	mCreate      = "create"
	mResync      = "resync"
	mDelete      = "delete"
	mRealInstall = "real-install"
	// mRealInstallEmpty is payload-applier's install when the payload's own
	// namespaces do not exist yet.
	mRealInstallEmpty = "real-install-empty"
	mRealResync       = "real-resync"
)

func mixedID(step string, size int) string { return fmt.Sprintf("mixed-%d-%s", size, step) }

// stepTimeout bounds any one timed step.
const stepTimeout = 10 * time.Minute

// step times fn for t, then runs check untimed, and counts the tool's
// requests and writes in the audit log.
func (b *bench) step(ctx context.Context, id string, t tool, fn func(context.Context) error, check func(context.Context) error) sample {
	if p, ok := t.(preparer); ok {
		if err := p.prepare(ctx, id); err != nil {
			return b.res.add(id, t.name(), sample{Err: "prepare: " + err.Error()})
		}
	}
	mark, err := b.e.c.AuditMark()
	if err != nil {
		return b.res.add(id, t.name(), sample{Err: err.Error()})
	}
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	start := time.Now()
	err = fn(stepCtx)
	elapsed := time.Since(start)
	cancel()
	if err == nil && check != nil {
		err = check(ctx)
	}
	s := sample{Seconds: elapsed.Seconds()}
	if err != nil {
		s.Err = err.Error()
	}
	events, aerr := b.e.c.AuditEventsSince(mark)
	if aerr == nil {
		s.Requests = len(cluster.FilterAudit(events, cluster.AuditFilter{User: t.userName()}))
		var writes []cluster.AuditEvent
		for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{User: t.userName(), WritesOnly: true}) {
			if strings.Contains(ev.RequestURI, "dryRun=All") {
				s.DryRuns++ // a dry run writes nothing
				continue
			}
			writes = append(writes, ev)
		}
		s.Writes = len(writes)
		if os.Getenv("BENCH_DEBUG") != "" {
			logRequestMix(cluster.FilterAudit(events, cluster.AuditFilter{User: t.userName()}))
		}
		if strings.Contains(id, "resync") && len(writes) > 0 && t.name() != toolKubectl {
			for i, ev := range writes {
				if i == 12 {
					logf("  … %d more writes", len(writes)-i)
					break
				}
				logf("  resync write: %s", ev)
			}
		}
	}
	logf("%-14s %-28s %7.2fs  %5d requests %5d writes %2d dry runs %s", id, t.name(), s.Seconds, s.Requests, s.Writes, s.DryRuns, s.Err)
	return b.res.add(id, t.name(), s)
}

// configMaps measures create, no-op resync and delete-to-gone of the
// ConfigMap workload, each tool in its own namespace, repetitions
// interleaved so that a busy moment on the machine hits every tool.
func (b *bench) configMaps(ctx context.Context, tools []tool) error {
	n := b.o.cmCount
	for rep := 1; rep <= b.o.reps; rep++ {
		for i := range tools {
			t := tools[(i+rep-1)%len(tools)] // rotate who goes first
			lim, isLimited := t.(limited)
			if isLimited && rep > lim.maxReps() {
				continue
			}
			ns := fmt.Sprintf("bench-cm-%s-%d", t.name(), rep)
			w := configMapWorkload(fmt.Sprintf("cm-%s-%d", t.name(), rep), ns, n)
			if err := w.write(b.work); err != nil {
				return err
			}
			if err := b.e.createNamespaces(ctx, w.namespaces); err != nil {
				return err
			}
			present := func(want int) func(context.Context) error {
				return func(ctx context.Context) error {
					got, err := b.e.countPresent(ctx, w.objects)
					if err == nil && got != want {
						err = fmt.Errorf("%d of %d objects present, want %d", got, len(w.objects), want)
					}
					return err
				}
			}
			created := b.step(ctx, mCreate, t, func(ctx context.Context) error { return t.install(ctx, w) }, present(n))
			if created.Err != "" {
				_ = b.e.cleanup(ctx, w.objects, w.namespaces)
				continue
			}
			b.step(ctx, mResync, t, func(ctx context.Context) error { return t.resync(ctx, w) }, present(n))
			if isLimited && (!lim.measuresDelete() || rep > lim.deleteReps()) {
				if err := b.e.cleanup(ctx, w.objects, w.namespaces); err != nil {
					return err
				}
				continue
			}
			b.step(ctx, mDelete, t, func(ctx context.Context) error {
				if err := t.remove(ctx, w); err != nil {
					return err
				}
				return b.e.waitGone(ctx, w.objects, stepTimeout)
			}, nil)
			if err := b.e.cleanup(ctx, w.objects, w.namespaces); err != nil {
				return err
			}
		}
	}
	return nil
}

// realPayload installs the real payload with each tool, resyncs it, and
// removes it before the next tool starts. payload-applier first installs it
// once on a cluster that has only the namespaces the corpus lacks; then
// every namespace of the payload stays, so that each tool starts from the
// same state without waiting minutes for namespace deletion between tools.
func (b *bench) realPayload(ctx context.Context, tools []tool) error {
	rel, err := loadReal(b.o.realDir)
	if err != nil {
		return fmt.Errorf("load the real payload: %w", err)
	}
	w := releaseWorkload("real", rel)
	if err := w.write(b.work); err != nil {
		return err
	}
	typed := releaseWorkload("real-typed", rel)
	if err := typed.typedForKapp(); err != nil {
		return err
	}
	if err := typed.write(b.work); err != nil {
		return err
	}
	b.res.Real = realInfo{Documents: len(rel.Manifests) + len(rel.Skipped), Applied: len(w.objects), MissingNamespaces: len(w.namespaces), Typed: typed.typedCount}
	if err := b.e.createNamespaces(ctx, w.namespaces); err != nil {
		return err
	}
	nsObjects, nonNamespaces := splitNamespaces(w.objects)
	var payloadNamespaces []string
	for _, o := range nsObjects {
		payloadNamespaces = append(payloadNamespaces, o.GetName())
	}
	run := func(t tool, install string, w *workload) error {
		// Operators report their ClusterOperators Available as soon as they
		// exist, for every tool alike: no operator runs here, and
		// payload-applier, as the CVO, waits for them.
		stopOperators := b.playOperators(ctx, rel)
		installed := b.step(ctx, install, t, func(ctx context.Context) error { return t.install(ctx, w) }, nil)
		if install == mRealInstall && installed.Err == "" {
			b.step(ctx, mRealResync, t, func(ctx context.Context) error { return t.resync(ctx, w) }, nil)
		}
		stopOperators()
		logf("removing the real payload (namespaces stay)")
		return b.e.cleanup(ctx, nonNamespaces, nil)
	}
	for _, t := range tools {
		if t.name() == toolEngine {
			if err := run(t, mRealInstallEmpty, w); err != nil {
				return err
			}
			if err := b.e.createNamespaces(ctx, payloadNamespaces); err != nil {
				return err
			}
		}
	}
	if err := b.e.createNamespaces(ctx, payloadNamespaces); err != nil {
		return err
	}
	for _, t := range tools {
		switch t.name() {
		case toolRaw, toolRawApply:
			continue // the raw limit knows no ordering: CRs would race their CRDs
		case toolKapp:
			k := t.(*kappTool)
			k.realPayload = true
			if err := run(t, mRealInstall, w); err != nil {
				return err
			}
			if err := run(&kappTool{e: k.e, bin: k.bin, kubeconfig: k.kubeconfig, realPayload: true, typed: true}, mRealInstall, typed); err != nil {
				return err
			}
			k.realPayload = false
			continue
		}
		if err := run(t, mRealInstall, w); err != nil {
			return err
		}
	}
	return nil
}

// mixed installs and resyncs generated mixed-kind payloads of each size.
func (b *bench) mixed(ctx context.Context, tools []tool) error {
	for _, size := range b.o.sizes {
		for _, t := range tools {
			if lim, ok := t.(limited); ok && size > lim.maxSize() {
				continue
			}
			if t.name() == toolRawApply {
				continue // shown with the ConfigMaps; the sizes keep to the tools compared
			}
			w := mixedWorkload(fmt.Sprintf("mixed-%d-%s", size, t.name()), fmt.Sprintf("m%d-%s", size, shortName(t.name())), size)
			if err := w.write(b.work); err != nil {
				return err
			}
			present := func(ctx context.Context) error {
				got, err := b.e.countPresent(ctx, w.objects)
				if err == nil && got != len(w.objects) {
					err = fmt.Errorf("%d of %d objects present", got, len(w.objects))
				}
				return err
			}
			b.step(ctx, mixedID("install", size), t, func(ctx context.Context) error { return t.install(ctx, w) }, present)
			b.step(ctx, mixedID("resync", size), t, func(ctx context.Context) error { return t.resync(ctx, w) }, present)
			// kapp's app record stays behind: it is small and its name unique.
			if err := b.e.deleteNamespaces(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// logRequestMix logs how many requests of each verb and resource a step made.
func logRequestMix(events []cluster.AuditEvent) {
	counts := map[string]int{}
	for _, ev := range events {
		res := ev.RequestURI
		if ev.ObjectRef != nil {
			res = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				res += "/" + ev.ObjectRef.Subresource
			}
		} else if i := strings.IndexByte(res, '?'); i >= 0 {
			res = res[:i]
		}
		counts[ev.Verb+" "+res]++
	}
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range counts {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var parts []string
	for i, e := range all {
		if i == 12 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s=%d", e.k, e.n))
	}
	logf("  requests: %s", strings.Join(parts, " "))
}

func shortName(tool string) string {
	switch tool {
	case toolEngine:
		return "pa"
	}
	return tool
}
