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

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// webhookBurst creates n Scenes, ten at a time, through the API server and so the Scene
// admission webhook, and reports the webhook's own latency (controller-runtime's histogram)
// and that of the whole create as the client sees it.
func webhookBurst(ctx context.Context, c client.Client, n int) {
	ns := namespace(ctx, c, "bench-webhook")
	var mu sync.Mutex
	var creates []time.Duration
	work := make(chan int)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for i := range work {
				scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", i), Namespace: ns}}
				scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "who", Default: new("world")}}
				scene.Spec.Steps = tenSteps()
				scene.Spec.Steps[0].Container.Command = []string{"echo", "hello {{ .params.who }}"}
				start := time.Now()
				must(c.Create(ctx, scene))
				mu.Lock()
				creates = append(creates, time.Since(start))
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	slices.Sort(creates)
	fmt.Printf("  create as the client sees it: p50 %s, p99 %s\n", pct(creates, 50), pct(creates, 99))
	families, err := metrics.Registry.Gather()
	must(err)
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			path := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" {
					path = l.GetValue()
				}
			}
			if !strings.Contains(path, "scene") {
				continue
			}
			h := m.GetHistogram()
			quantile := func(q float64) string {
				target := q * float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					if float64(b.GetCumulativeCount()) >= target {
						return fmt.Sprintf("<= %s", time.Duration(b.GetUpperBound()*float64(time.Second)))
					}
				}
				return "over the last bucket"
			}
			fmt.Printf("  webhook %s: %d calls, mean %.1f ms, p50 %s, p99 %s (histogram buckets)\n", path, h.GetSampleCount(),
				1000*h.GetSampleSum()/float64(h.GetSampleCount()), quantile(0.5), quantile(0.99))
		}
	}
}
