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

	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/budget"
)

// spent is what the other Runs of a Scene with a budget used within its window, from their
// status (which only the manager writes); nothing for a Scene without a budget.
func (r *RunReconciler) spent(ctx context.Context, run *ergonv1alpha1.Run, scene *ergonv1alpha1.Scene) (budget.Spending, error) {
	if scene.Spec.Budget == nil {
		return budget.Spending{}, nil
	}
	runs := &ergonv1alpha1.RunList{}
	if err := r.List(ctx, runs, client.InNamespace(run.Namespace), client.MatchingFields{shared.SceneRefField: scene.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return budget.Spending{}, err
	}
	return budget.SceneSpent(runs.Items, run.Name, r.Clock.Now()), nil
}
