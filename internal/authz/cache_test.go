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

package authz

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// reviewer answers SubjectAccessReviews as an authorizer would: it allows the users in
// allowed, after a delay, and counts the reviews asked. It is the only call Authorizer makes.
type reviewer struct {
	client.Client
	delay   time.Duration
	allowed map[string]bool
	asked   atomic.Int64
}

func (r *reviewer) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	r.asked.Add(1)
	time.Sleep(r.delay)
	sar := obj.(*authorizationv1.SubjectAccessReview)
	sar.Status.Allowed = r.allowed[sar.Spec.User]
	return nil
}

func TestAllowedAsksOnceForQuestionsInFlightAndCached(t *testing.T) {
	r := &reviewer{delay: 50 * time.Millisecond, allowed: map[string]bool{"erin": true}}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	a := &Authorizer{Client: r, Clock: clock}
	erin := ergonv1alpha1.UserIdentity{Username: "erin", Groups: []string{"team"}}
	get := Attributes{Verb: "get", Resource: "secrets", Namespace: "team-a", Name: "token"}

	// A fan-out's pods ask the same question at once: one review answers them all.
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 64 {
		wg.Go(func() {
			if ok, _, err := a.Allowed(context.Background(), erin, get); err != nil || !ok {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if refused.Load() != 0 || r.asked.Load() != 1 {
		t.Fatalf("64 callers at once: %d refused, %d reviews asked; want 0 refused and 1 review", refused.Load(), r.asked.Load())
	}
	if s := a.Stats(); s.Reviews != 1 || s.Hits != 63 {
		t.Fatalf("stats %+v: want 1 review and 63 answers reused", s)
	}

	// Another identity, or the same with other groups, or another name, is another question.
	for _, q := range []struct {
		id    ergonv1alpha1.UserIdentity
		attrs Attributes
		want  bool
	}{
		{ergonv1alpha1.UserIdentity{Username: "mallory"}, get, false},
		{ergonv1alpha1.UserIdentity{Username: "erin", Groups: []string{"team", "system:masters"}}, get, true},
		{erin, Attributes{Verb: "get", Resource: "secrets", Namespace: "team-a", Name: "other"}, true},
	} {
		before := r.asked.Load()
		if ok, _, _ := a.Allowed(context.Background(), q.id, q.attrs); ok != q.want || r.asked.Load() != before+1 {
			t.Fatalf("%s %s: allowed %v after %d reviews; want %v after one", q.id.Username, q.attrs, ok, r.asked.Load()-before, q.want)
		}
	}

	// Within the TTL the answer is reused; past it, asked again, so a revocation is seen.
	before := r.asked.Load()
	clock.SetTime(clock.Now().Add(DefaultTTL - time.Second))
	_, _, _ = a.Allowed(context.Background(), erin, get)
	if r.asked.Load() != before {
		t.Fatalf("asked again within the TTL")
	}
	r.allowed["erin"] = false
	clock.SetTime(clock.Now().Add(2 * time.Second))
	if ok, _, _ := a.Allowed(context.Background(), erin, get); ok || r.asked.Load() != before+1 {
		t.Fatalf("past the TTL: allowed %v after %d reviews; want refused after one", ok, r.asked.Load()-before)
	}
}
