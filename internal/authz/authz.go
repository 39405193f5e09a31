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

// Package authz authorizes Ergon's effects at the moment they happen: before the manager creates
// anything for a Run, it asks the API server, with SubjectAccessReviews, whether every identity
// the Run acts for may use every object the effect references, computed from the object about to
// be created. Decisions are cached for a few seconds, keyed by the whole identity and every
// attribute of the question.
package authz

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// Attributes is one question about one object: may the identity do Verb on it.
type Attributes struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// String is the question as a person reads it: "get secrets/api-key in namespace team-a".
func (a Attributes) String() string {
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Name != "" {
		res += " " + a.Name
	}
	return fmt.Sprintf("%s %s in namespace %s", a.Verb, res, a.Namespace)
}

// Denied is an effect refused because an identity may not do what it asks.
type Denied struct {
	Who    ergonv1alpha1.UserIdentity
	Role   string // how the identity relates to the Run: "the Run's identity", "editor of Scene x"
	Attrs  Attributes
	Reason string // the authorizer's, when it gave one
}

func (d *Denied) Error() string {
	msg := fmt.Sprintf("%s (%s) may not %s", d.Who.Username, d.Role, d.Attrs)
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}

// Actor is an identity the effect is done for, with how it relates to the Run, for messages.
type Actor struct {
	Identity ergonv1alpha1.UserIdentity
	Role     string
}

// Creator creates objects: all an Authorizer asks of the API server.
type Creator interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// DefaultTTL is how long a decision is reused: a permission revoked takes at most this long to
// be refused.
const DefaultTTL = 10 * time.Second

// Authorizer asks SubjectAccessReviews and caches their answers.
type Authorizer struct {
	// Client creates SubjectAccessReviews (never cached: a create goes to the API server).
	// It reads nothing, so an Authorizer gives whoever holds it no way to read.
	Client Creator
	// Clock tells when a cached answer is too old; the real clock when nil.
	Clock clock.PassiveClock
	// TTL bounds how long an answer is reused; DefaultTTL when zero, at most DefaultTTL.
	TTL time.Duration

	mu    sync.Mutex
	cache map[string]decision
	// asking joins the callers of one question while its review is in flight: a fan-out's
	// pods, created at once, ask one review, not one each.
	asking singleflight.Group

	reviews atomic.Int64
	hits    atomic.Int64
	spent   atomic.Int64 // nanoseconds inside Check
	checks  atomic.Int64
}

type decision struct {
	allowed bool
	reason  string
	at      time.Time
}

// Stats are what the authorizer did: SubjectAccessReviews asked, answers taken from the cache,
// effects checked and the time spent checking them.
type Stats struct {
	Reviews, Hits, Checks int64
	Spent                 time.Duration
}

// Stats are the figures so far.
func (a *Authorizer) Stats() Stats {
	return Stats{Reviews: a.reviews.Load(), Hits: a.hits.Load(), Checks: a.checks.Load(), Spent: time.Duration(a.spent.Load())}
}

// maxEntries bounds the cache; past it, stale entries are dropped, then all.
const maxEntries = 50000

func (a *Authorizer) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

func (a *Authorizer) ttl() time.Duration {
	if a.TTL <= 0 || a.TTL > DefaultTTL {
		return DefaultTTL
	}
	return a.TTL
}

// Allowed asks whether the identity may do what the attributes say.
func (a *Authorizer) Allowed(ctx context.Context, id ergonv1alpha1.UserIdentity, attrs Attributes) (bool, string, error) {
	key := identity.Key(id) + "\x00" + strings.Join([]string{attrs.Verb, attrs.Group, attrs.Resource,
		attrs.Subresource, attrs.Namespace, attrs.Name}, "\x00")
	now := a.now()
	a.mu.Lock()
	if d, ok := a.cache[key]; ok && now.Sub(d.at) < a.ttl() && !now.Before(d.at) {
		a.mu.Unlock()
		a.hits.Add(1)
		return d.allowed, d.reason, nil
	}
	a.mu.Unlock()

	asked := false
	v, err, _ := a.asking.Do(key, func() (any, error) {
		asked = true
		d, err := a.review(ctx, id, attrs)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		if a.cache == nil || len(a.cache) >= maxEntries {
			a.cache = a.prune(now)
		}
		a.cache[key] = d
		a.mu.Unlock()
		return d, nil
	})
	if err != nil {
		return false, "", err
	}
	if !asked {
		a.hits.Add(1) // the answer to a review another caller asked
	}
	d := v.(decision)
	return d.allowed, d.reason, nil
}

// review asks the API server one question, as of now.
func (a *Authorizer) review(ctx context.Context, id ergonv1alpha1.UserIdentity, attrs Attributes) (decision, error) {
	now := a.now()
	sar := &authorizationv1.SubjectAccessReview{Spec: identity.Review(id)}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Verb: attrs.Verb, Group: attrs.Group, Resource: attrs.Resource, Subresource: attrs.Subresource,
		Namespace: attrs.Namespace, Name: attrs.Name,
	}
	a.reviews.Add(1)
	if err := a.Client.Create(ctx, sar); err != nil {
		return decision{}, fmt.Errorf("asking whether %s may %s: %w", id.Username, attrs, err)
	}
	d := decision{allowed: sar.Status.Allowed && !sar.Status.Denied, reason: sar.Status.Reason, at: now}
	if sar.Status.EvaluationError != "" && !d.allowed {
		d.reason = strings.TrimSpace(d.reason + " " + sar.Status.EvaluationError)
	}
	return d, nil
}

// prune keeps the entries still fresh, or none when that is still too many.
func (a *Authorizer) prune(now time.Time) map[string]decision {
	fresh := map[string]decision{}
	for k, d := range a.cache {
		if now.Sub(d.at) < a.ttl() {
			fresh[k] = d
		}
	}
	if len(fresh) >= maxEntries {
		return map[string]decision{}
	}
	return fresh
}

// Check asks, for every actor and every question, whether the actor may; the first refusal is
// returned as a *Denied. Every actor must be allowed everything.
func (a *Authorizer) Check(ctx context.Context, actors []Actor, questions []Attributes) error {
	start := time.Now()
	defer func() {
		a.checks.Add(1)
		a.spent.Add(int64(time.Since(start)))
	}()
	for _, q := range questions {
		for _, actor := range actors {
			ok, reason, err := a.Allowed(ctx, actor.Identity, q)
			if err != nil {
				return err
			}
			if !ok {
				return &Denied{Who: actor.Identity, Role: actor.Role, Attrs: q, Reason: reason}
			}
		}
	}
	return nil
}
