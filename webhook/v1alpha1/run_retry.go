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
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// checkRetryOf refuses a retry of a Run that does not exist, that the requester may not read
// (a retry reads its outputs on the requester's behalf), or that the Run controller would
// refuse to retry: of another Scene, not finished, succeeded, or with other params.
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
	original := &ergonv1alpha1.Run{}
	err = v.Reader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, original)
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(path, name+
			": retryOf names a finished Run of this namespace to retry; check the name with kubectl get runs")}, nil
	}
	if err != nil {
		return nil, err
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
	return nil, nil
}
