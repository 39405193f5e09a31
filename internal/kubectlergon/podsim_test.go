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

package kubectlergon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The simulated kubelet (internal/testenv) runs the step pods; a spec's script decides each
// pod's outcome by its step.
type (
	outcome = testenv.Outcome
	script  func(step string) outcome
)

// simLogs serves the logs the simulated kubelet wrote to the Run controller (PodLogs, controllers/internal/shared)
// and to the plugin (LogSource).
type simLogs struct{ *testenv.Logs }

// Log serves the plugin as the kubelet would: only while the pod exists (Ergon deletes step
// pods once their step ended), and not before its container started (the API server answers
// 400 "container ... is waiting to start"). A followed stream, once open, stays open until the
// container ends and then delivers all it wrote, even if the pod is deleted right after. The
// simulated container writes its whole log when it ends, so a running one has none yet.
func (l simLogs) Log(ctx context.Context, ns, pod string, follow bool, _ *int64) (io.ReadCloser, error) {
	p := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
		return nil, err
	}
	if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(
			"container %q in pod %q is waiting to start: ContainerCreating", "step", pod))
	}
	if follow {
		followers.add(ns, pod)
	}
	for {
		if log, err := l.Whole(ns, pod); err == nil {
			return io.NopCloser(bytes.NewReader(log)), nil
		}
		if !follow {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p); apierrors.IsNotFound(err) {
			if log, err := l.Whole(ns, pod); err == nil { // it ended as it went
				return io.NopCloser(bytes.NewReader(log)), nil
			}
			return io.NopCloser(bytes.NewReader(nil)), nil // it ended without a log
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// followers records the pods whose log a followed stream was opened for.
var followers = followed{pods: map[string]bool{}}

type followed struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (f *followed) add(ns, pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[ns+"/"+pod] = true
}

func (f *followed) has(ns, pod string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods[ns+"/"+pod]
}

// endOnceFollowed keeps the pods of the steps named running, in a namespace newNamespace made,
// until a follower of their log is in place; then they end as the namespace's script says. A
// step that ends within a moment is deleted within another (Ergon deletes a step's pod once its
// end is recorded), and a spec about following its log must not race that.
func endOnceFollowed(ns string, s script, steps ...string) {
	sim.Use(ns, func(pod *corev1.Pod) testenv.Outcome {
		step := pod.Labels[ergonv1alpha1.LabelStep]
		o := s(step)
		if slices.Contains(steps, step) && !followers.has(pod.Namespace, pod.Name) {
			o.Stay = true
		}
		return o
	})
}
