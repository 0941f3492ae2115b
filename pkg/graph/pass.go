package graph

import "context"

// Pass is one walk of a payload: its apply graph and its delete walk, with
// the function and options for each.
type Pass struct {
	// Apply is the apply graph (Build); nil means nothing to apply.
	Apply        *Graph
	ApplyFn      TaskFunc
	ApplyOptions RunOptions
	// Delete is the delete walk (BuildDeletes); nil means nothing to delete.
	Delete        *Graph
	DeleteFn      TaskFunc
	DeleteOptions RunOptions
}

// PassResult keeps the two walks' results apart, so that the caller judges
// the update by Apply alone and reports Delete progress on its own.
type PassResult struct {
	Apply  *Result
	Delete *Result
}

// RunPass runs the apply walk to the end and then the delete walk, whether
// or not applies failed. Deleting after applying (prune-after-apply, as
// kapp, Argo CD and cli-utils do) means replacements exist before the old
// objects go; running deletes even after a failed apply means one broken
// component never holds back unrelated cleanup. Deletes never block applies:
// they start only after the last apply finished, and a waiting delete is
// not an error. A cancelled ctx stops both walks.
func RunPass(ctx context.Context, p Pass) PassResult {
	applied := Run(ctx, p.Apply, p.ApplyOptions, p.ApplyFn)
	deleted := Run(ctx, p.Delete, p.DeleteOptions, p.DeleteFn)
	return PassResult{Apply: applied, Delete: deleted}
}
