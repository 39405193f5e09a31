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

package planner

import (
	"slices"
	"time"
)

// QuotaRetry is how often a pod that a full ResourceQuota refused is tried again, as
// Kubernetes' Job controller does; SlotRetry is how often a Run that waits for a step pod
// slot is planned again even when no slot frees to wake it sooner.
const (
	QuotaRetry = 10 * time.Second
	SlotRetry  = 30 * time.Second
)

// decideRetries creates again the pods that wait for room in a quota, but those the plan
// creates anew or stops, and plans the Run again soon enough for them and for the steps that
// wait for a slot.
func (p *planner) decideRetries() {
	planned := map[string]bool{}
	for _, req := range p.plan.Pods {
		planned[req.Name] = true
	}
	for _, name := range slices.Concat(p.plan.DeletePods, p.plan.CleanupPods) {
		planned[name] = true
	}
	for _, name := range p.f.QuotaWaiting {
		if !planned[name] {
			p.plan.RetryPods = append(p.plan.RetryPods, name)
		}
	}
	slices.Sort(p.plan.RetryPods)
	if len(p.f.QuotaWaiting) > 0 {
		p.plan.RequeueAfter = sooner(p.plan.RequeueAfter, QuotaRetry)
	}
	if p.plan.WaitingForSlots > 0 {
		p.plan.RequeueAfter = sooner(p.plan.RequeueAfter, SlotRetry)
	}
}

// sooner is the earlier of two waits, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
