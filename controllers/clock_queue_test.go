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

package controllers

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// clockedOptions are controller options whose work queue waits out RequeueAfter on a fake
// clock instead of the wall clock, so a test that steps the clock sees the next schedule time
// come. Rate-limited retries keep the wall clock, so a failing reconcile is still retried
// while the fake clock stands still.
func clockedOptions(c clock.WithDelayedExecution) controller.Options {
	return controller.Options{
		NewQueue: func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request],
		) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return clockedQueue{
				TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
					workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name}),
				clock: c,
			}
		},
	}
}

type clockedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	clock clock.WithDelayedExecution
}

func (q clockedQueue) AddAfter(item reconcile.Request, d time.Duration) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.clock.AfterFunc(d, func() { q.Add(item) })
}
