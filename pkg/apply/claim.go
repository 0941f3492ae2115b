package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// claimReadParallelism bounds the reads of an update's claims.
const claimReadParallelism = 8

// readClaimed reads the objects ms name, index for index: one LIST per
// resource and namespace that several share, else a GET. An object not
// found, or not read because the read failed, is nil: its claim then
// records no UID, and the walk's own read supplies it when it issues.
func (p *pass) readClaimed(ctx context.Context, ms []*payload.Manifest) []*unstructured.Unstructured {
	seen := make([]*unstructured.Unstructured, len(ms))
	type group struct {
		rc      resourceClient
		members []int
	}
	groups := map[listKey]*group{}
	var order []listKey
	for i, m := range ms {
		rc, err := p.resourceFor(m)
		if err != nil {
			continue // a kind no longer served has no object left
		}
		key := listKey{gvk: m.GVK, namespace: rc.namespace}
		if groups[key] == nil {
			groups[key] = &group{rc: rc}
			order = append(order, key)
		}
		groups[key].members = append(groups[key].members, i)
	}
	tasks := make([]*graph.Task, len(order))
	for i := range order {
		tasks[i] = &graph.Task{Index: i}
	}
	graph.Run(ctx, graph.Unordered(tasks), graph.RunOptions{Parallelism: claimReadParallelism}, func(ctx context.Context, t *graph.Task) error {
		g := groups[order[t.Index]]
		if len(g.members) < listThreshold(order[t.Index].gvk.GroupKind()) {
			for _, i := range g.members {
				seen[i], _ = g.rc.read(ctx, ms[i].Obj.GetName())
			}
			return nil
		}
		want := map[string][]int{}
		for _, i := range g.members {
			name := ms[i].Obj.GetName()
			want[name] = append(want[name], i)
		}
		return g.rc.list(ctx, func(obj *unstructured.Unstructured) {
			for _, i := range want[obj.GetName()] {
				item := *obj
				seen[i] = &item
			}
		})
	})
	return seen
}
