/*
Copyright 2026 The Ergon Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package run

import (
	"context"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
)

// Call graphs cannot explode: every Run records the root of its cause and its depth
// (internal/cause), and before a Run creates a child Run the planner checks the depth, the
// child Runs this Run created and the Runs its root caused against the manager's limits. The
// counts come from the cache, joined with the Runs this manager created in the last minute
// (cause.Ledger), so a burst of creations is counted before the cache sees it.

// CauseLimits are the limits the Run engine applies; RunConfig.MaxDepth, when set, is the
// cause depth (it predates the other limits).
func (c RunConfig) CauseLimits() cause.Limits {
	l := c.Causes
	if c.MaxDepth > 0 {
		l.MaxDepth = c.MaxDepth
	}
	return l.OrDefaults()
}

// ledger is the record of Runs created a moment ago, shared with the Trigger controller and
// the hooks server when the manager wires one in.
func (r *RunReconciler) ledger() *cause.Ledger {
	r.ledgerOnce.Do(func() {
		if r.Ledger == nil {
			r.Ledger = &cause.Ledger{}
		}
	})
	return r.Ledger
}

// gatherCalls counts what the Run has caused so far, for a Run whose Scene calls other Scenes:
// the child Runs it created (f.Children, gathered before) and the Runs its cause's root caused.
func (r *RunReconciler) gatherCalls(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts) error {
	limits := r.Config.CauseLimits()
	f.Calls, f.MaxDepth = limits, limits.MaxDepth
	if len(shared.CalledScenes(scene.Spec)) == 0 {
		return nil
	}
	now := r.Clock.Now()
	var children []string
	for name, c := range f.Children {
		if c.Refused == "" {
			children = append(children, name)
		}
	}
	f.ChildRuns = r.ledger().Count(cause.ChildrenKey(run), children, now)
	root := cause.Of(run).Root
	caused, err := shared.CausedBy(ctx, r.Client, run.Namespace, root)
	if err != nil {
		return err
	}
	f.Caused = r.ledger().Count(cause.RootLedgerKey(root), caused, now)
	return nil
}

// recordChild remembers a child Run the Run created, under its parent and its root.
func (a *runActor) recordChild(run, child *ergonv1alpha1.Run) {
	now := a.Clock.Now()
	a.calls.Record(cause.ChildrenKey(run), child.Name, now)
	a.calls.Record(cause.RootLedgerKey(cause.Of(child).Root), child.Name, now)
}
