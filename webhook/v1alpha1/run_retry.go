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

package v1alpha1

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
)

// checkRetryOf refuses a retry of a Run that does not exist, live or archived, that the
// requester may not read (a retry reads its outputs on the requester's behalf; an archived Run
// is read with the same right, get runs in its namespace), or that the Run controller would
// refuse: of another Scene, not finished, a retry of a success or with other params, a rerun
// from a step the snapshot lacks or with params that do not fit it.
func (v *RunValidator) checkRetryOf(ctx context.Context, run *ergonv1alpha1.Run) (field.ErrorList, error) {
	path := field.NewPath("spec", "retryOf", "name")
	name := run.Spec.RetryOf.Name
	who, err := v.secrets.requester(ctx)
	if err != nil {
		return nil, err
	}
	if who != nil {
		sar := &authorizationv1.SubjectAccessReview{Spec: *who.DeepCopy()}
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: run.Namespace, Verb: "get", Group: ergonv1alpha1.GroupVersion.Group, Resource: "runs", Name: name,
		}
		if err := v.secrets.client.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("asking whether %s may get Run %s/%s: %w", who.User, run.Namespace, name, err)
		}
		if !sar.Status.Allowed {
			return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
				"you may not get Run %s, and a retry reuses its outputs; ask for get on runs in namespace %s", name, run.Namespace))}, nil
		}
	}
	original, snapshot, err := v.retried(ctx, run.Namespace, name)
	if err != nil {
		return nil, err
	}
	if original == nil {
		return field.ErrorList{field.NotFound(path, name+
			": retryOf names a finished Run of this namespace, live or archived, to retry; check the name with kubectl ergon history")}, nil
	}
	if at, problem := planner.RetryProblem(run, original); problem != "" {
		p := path
		switch at {
		case "spec.sceneRef.name":
			p = field.NewPath("spec", "sceneRef", "name")
		case "spec.params":
			p = field.NewPath("spec", "params")
		}
		return field.ErrorList{field.Invalid(p, name, problem)}, nil
	}
	if snapshot == nil { // in a ConfigMap: the Run controller checks what follows when it starts
		return nil, nil
	}
	var errs field.ErrorList
	hasStep := func(name string) bool {
		return slices.ContainsFunc(snapshot.Steps, func(s ergonv1alpha1.Step) bool { return s.Name == name })
	}
	if from := run.Spec.RetryOf.From; from != "" && !hasStep(from) {
		var steps []string
		for _, s := range snapshot.Steps {
			steps = append(steps, s.Name)
		}
		errs = append(errs, field.NotFound(field.NewPath("spec", "retryOf", "from"), from+
			": not a step of the snapshot of Run "+name+"; its steps are "+strings.Join(steps, ", ")))
	}
	return append(errs, compile.CheckParams(snapshot, run.Spec.Params)...), nil
}

// retried reads the Run a retry names, and its snapshot when the Run holds it inline: the live
// Run, else the newest archived one of this namespace (by its UID). It returns a nil Run when
// there is neither.
func (v *RunValidator) retried(ctx context.Context, namespace, name string) (*ergonv1alpha1.Run, *ergonv1alpha1.SceneSpec, error) {
	original := &ergonv1alpha1.Run{}
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, original)
	if err == nil {
		return original, original.Status.SceneSnapshot, nil
	}
	if !apierrors.IsNotFound(err) || v.archive == nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	rec, err := archive.FindIn(ctx, v.live, v.archive, namespace, name)
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading Run %s from the archive: %w", name, err)
	}
	return rec.Original(), rec.Snapshot, nil
}
