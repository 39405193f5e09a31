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

package shared

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// RunValues reads the values a Run keeps outside its status (its snapshot, its outputs), as
// the Run and archive controllers both do: from the cache or, when the cache does not have
// the ConfigMap yet, from the API server, and always verified against what the status records.
type RunValues struct {
	Cached, Live client.Reader
}

// getLive reads an object from the cache or, when the cache does not have it, from the API
// server: an object created a moment ago, or one the cache does not select.
func (v RunValues) getLive(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := v.Cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = v.Live.Get(ctx, key, obj)
	}
	return err
}

// ReadSnapshot reads a snapshot kept in a ConfigMap: the Run's own, with the recorded digest.
func (v RunValues) ReadSnapshot(ctx context.Context, run *ergonv1alpha1.Run) (*ergonv1alpha1.SceneSpec, error) {
	ref := run.Status.SceneSnapshotRef
	cm := &corev1.ConfigMap{}
	if err := v.getLive(ctx, client.ObjectKey{Namespace: run.Namespace, Name: ref.ConfigMap}, cm); err != nil {
		return nil, err
	}
	want := RunWants(run, "the snapshot", ref.Key)
	want.SHA256 = run.Status.SceneSnapshotSHA256
	if want.SHA256 == "" {
		// Taken by a manager that recorded no digest: nothing tells its snapshot from a forged one.
		return nil, &ConflictError{fmt.Sprintf("Run %s records no SHA-256 of its snapshot in ConfigMap %s; "+
			"Ergon does not execute a snapshot it cannot verify: create the Run again", run.Name, ref.ConfigMap)}
	}
	value, err := VerifyInternal(cm, want)
	if err != nil {
		return nil, err
	}
	spec := &ergonv1alpha1.SceneSpec{}
	if err := json.Unmarshal([]byte(value), spec); err != nil {
		return nil, fmt.Errorf("the snapshot in ConfigMap %s is corrupt: %w", ref.ConfigMap, err)
	}
	return spec, nil
}

// OutputValue reads a whole output: inline, or from the ConfigMap its Run (owner) wrote. A
// ConfigMap that owner did not write, or that does not hold the recorded size and digest, is
// a ConflictError.
func (v RunValues) OutputValue(ctx context.Context, owner *ergonv1alpha1.Run, out *ergonv1alpha1.OutputValue) (string, error) {
	if out.Ref == nil {
		return out.Preview, nil
	}
	cm := &corev1.ConfigMap{}
	// Not in the cache yet: written just before the status that names it.
	if err := v.getLive(ctx, client.ObjectKey{Namespace: owner.Namespace, Name: out.Ref.ConfigMap}, cm); err != nil {
		return "", err
	}
	return CheckOutput(cm, owner.UID, owner.Name, out)
}

// PodLogs reads the end of a container's log; the kubelet serves it through pods/log.
type PodLogs interface {
	Read(ctx context.Context, namespace, pod, container string, tail wire.Tail) (io.ReadCloser, error)
}

// Archived reports whether a Run's record is in the archive.
func Archived(run *ergonv1alpha1.Run) bool {
	return meta.IsStatusConditionTrue(run.Status.Conditions, ergonv1alpha1.ConditionArchived)
}

// DefaultArchiveGiveUpAfter is how long a deleted Run waits to be archived.
const DefaultArchiveGiveUpAfter = 10 * time.Minute

// StepContainer is the container of a step pod that runs the step: the one whose log is the step's.
const StepContainer = "step"
