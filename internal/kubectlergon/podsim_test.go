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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ergon-dev/ergon/internal/testenv"
)

// The simulated kubelet (internal/testenv) runs the step pods; a spec's script decides each
// pod's outcome by its step.
type (
	outcome = testenv.Outcome
	script  func(step string) outcome
)

// simLogs serves the logs the simulated kubelet wrote to the Run controller (controllers.PodLogs)
// and to the plugin (LogSource).
type simLogs struct{ *testenv.Logs }

// Log serves the plugin as the kubelet would: only while the pod exists (Ergon deletes step
// pods once their step ended), and not before its container started (the API server answers
// 400 "container ... is waiting to start"); following a running container's log ends with the
// container. The simulated container writes its whole log when it ends, so a running one has
// none yet.
func (l simLogs) Log(ctx context.Context, ns, pod string, follow bool, _ *int64) (io.ReadCloser, error) {
	for {
		p := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
			return nil, err
		}
		if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
			return nil, apierrors.NewBadRequest(fmt.Sprintf(
				"container %q in pod %q is waiting to start: ContainerCreating", "step", pod))
		}
		if log, err := l.Whole(ns, pod); err == nil {
			return io.NopCloser(bytes.NewReader(log)), nil
		}
		if !follow {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
