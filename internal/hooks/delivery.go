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

package hooks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// DefaultRefusalDelay is the least time an unauthenticated delivery waits for its answer.
const DefaultRefusalDelay = 50 * time.Millisecond

// NotAuthenticated is the one answer to every delivery not proven to come from the holder of
// a webhook Trigger's key: no such Trigger, not a webhook Trigger, no key Secret or no key in
// it, a missing, malformed or wrong signature, a stale timestamp, the other format's headers.
// It says nothing about which, so it tells a stranger nothing about what exists; the
// manager's log (verbosity 1) says why, and the Trigger's Ready condition says when its key is
// missing.
const NotAuthenticated = "the delivery is not authenticated: no webhook Trigger at this path accepts it as signed"

// answer is what a request is answered with.
type answer struct {
	status int
	body   any // accepted or failure
	// retryAfter is the Retry-After in seconds, when not 0.
	retryAfter int
	// closeConn closes the connection after the answer, for a body left unread.
	closeConn bool
	// reason is what the log says of a refusal; for the unauthenticated, what the sender is
	// not told.
	reason string
}

func refused(r *Refusal) answer {
	return answer{status: r.Status, body: failure{Error: r.Message}, reason: r.Message}
}

func unauthenticated(reason string) answer {
	return answer{status: http.StatusUnauthorized, body: failure{Error: NotAuthenticated}, reason: reason}
}

func busy(status int, after time.Duration, message string) answer {
	return answer{status: status, body: failure{Error: message + "; retry after " + strconv.Itoa(seconds(after)) + "s"},
		retryAfter: seconds(after), reason: message}
}

func (s *Server) serveDelivery(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now() // wall time: it paces the answer, it decides nothing
	ctx := req.Context()
	key := types.NamespacedName{Namespace: req.PathValue("namespace"), Name: req.PathValue("trigger")}
	log := logf.FromContext(ctx).WithValues("trigger", key.String())
	a := s.deliver(ctx, w, req, key)
	if b, ok := a.body.(accepted); ok {
		log.Info("Delivery accepted", "run", b.Run)
	} else {
		// The reason says what was wrong with the request; it holds no key and no body.
		log.V(1).Info("Delivery refused", "status", a.status, "reason", a.reason)
	}
	if a.status == http.StatusUnauthorized {
		s.waitUntil(ctx, arrived)
	}
	switch {
	case a.status == http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodPost)
	case a.retryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
	}
	if a.closeConn {
		w.Header().Set("Connection", "close")
	}
	countDelivery(a.status)
	writeJSON(w, a.status, a.body)
}

// waitUntil waits until RefusalDelay after arrived, or ctx ends.
func (s *Server) waitUntil(ctx context.Context, arrived time.Time) {
	delay := s.RefusalDelay
	if delay == 0 {
		delay = DefaultRefusalDelay
	}
	wait := time.Until(arrived.Add(delay))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// deliver does the work of one request. Until the signature is checked it holds at most one
// body slot, reads the Trigger from the cache and its key (at most every keyTTL), and hashes
// the body as it arrives; the body is kept only for a Trigger that maps params from it.
func (s *Server) deliver(ctx context.Context, w http.ResponseWriter, req *http.Request, key types.NamespacedName) answer {
	if req.Method != http.MethodPost {
		return refused(refuse(http.StatusMethodNotAllowed, "method %s is not allowed: deliveries are POSTed", req.Method))
	}
	if req.ContentLength > MaxBodyBytes {
		a := refused(refuse(http.StatusRequestEntityTooLarge, "the body is %d bytes, more than the %d allowed", req.ContentLength, MaxBodyBytes))
		a.closeConn = true
		return a
	}
	release, status := s.slots.take(key.String(), orDefault(s.MaxBodies, DefaultMaxBodies),
		orDefault(s.MaxBodiesPerTrigger, DefaultMaxBodiesPerTrigger))
	if status != 0 {
		a := busy(status, time.Second, "too many deliveries are being received right now")
		a.closeConn = true
		return a
	}
	defer release()

	v := s.verifier(ctx, key)
	c := readClaim(v.format, req.Header)
	mac := c.newMAC(v.key)
	body, refusal := readBody(w, req, mac, v.keepBody && c.problem == "")
	if refusal != nil {
		a := refused(refusal)
		a.closeConn = true
		return a
	}
	now := s.Clock.Now()
	delivery, problem := c.check(mac.Sum(nil), now)
	switch {
	case v.problem != "":
		return unauthenticated(v.problem)
	case problem != "":
		return unauthenticated(problem)
	}

	trigger := v.trigger
	replay := newReplayKey(trigger.UID, delivery.MAC)
	if s.replays.seen(replay, now) {
		return refused(replayed())
	}
	if ptr.Deref(trigger.Spec.Suspend, false) {
		return refused(refuse(http.StatusConflict, "Trigger %s is suspended (spec.suspend); it starts no Runs", key.Name))
	}
	if c := meta.FindStatusCondition(trigger.Status.Conditions, ergonv1alpha1.ConditionBudgetExceeded); trigger.Spec.Budget != nil &&
		c != nil && c.Status == metav1.ConditionTrue {
		// The Trigger controller keeps the condition from the Runs' usage.
		return refused(refuse(http.StatusTooManyRequests, "Trigger %s starts no Runs: %s", key.Name, c.Message))
	}
	if wait := s.reserve(trigger, now); wait > 0 {
		return busy(http.StatusTooManyRequests, wait, "Trigger "+key.Name+" accepts no more deliveries right now")
	}
	params, refusal := s.mapParams(trigger, body)
	release() // the body is no longer needed
	if refusal != nil {
		return refused(refusal)
	}
	name := naming.DeliveryRunName(trigger.Name, delivery.Key)
	forget, limit := s.reserveStart(ctx, trigger, name, now)
	if limit != nil {
		return *limit
	}
	added, full := s.replays.add(replay, delivery.Until, now, orDefault(s.MaxRemembered, DefaultMaxRemembered))
	switch {
	case full:
		forget()
		return busy(http.StatusServiceUnavailable, time.Minute, "too many deliveries in the last "+MaxSkew.String())
	case !added:
		forget()
		return refused(replayed())
	}

	run := triggers.NewRun(trigger, name, params)
	if err := s.Client.Create(ctx, run); err != nil && !apierrors.IsAlreadyExists(err) {
		forget()
		s.replays.drop(replay) // not accepted: the same request may come again
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			return refused(refuse(http.StatusUnprocessableEntity, "the Run was refused: %v", err))
		}
		logf.FromContext(ctx).Error(err, "Creating the Run", "run", run.Name)
		return refused(refuse(http.StatusServiceUnavailable, "the Run could not be created; try again with the same delivery id"))
	}
	s.recordDelivery(ctx, trigger, delivery, run.Name, now)
	return answer{status: http.StatusAccepted, body: accepted{Run: run.Name, Namespace: run.Namespace}}
}

func replayed() *Refusal {
	return refuse(http.StatusConflict, "this signed delivery was accepted already; "+
		"a retry is signed again, with a new timestamp and the same delivery id")
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// verifier is how a path's deliveries are checked: the Trigger's format and key, or, when
// there is no webhook Trigger or no key, a decoy key and Ergon's format, so the request takes
// the same work and gets the same answer as a bad signature.
type verifier struct {
	trigger  *ergonv1alpha1.Trigger
	format   ergonv1alpha1.WebhookFormat
	key      []byte
	keepBody bool
	// problem is why no delivery can be accepted, for the log; empty when one can.
	problem string
}

func (s *Server) verifier(ctx context.Context, key types.NamespacedName) verifier {
	v := verifier{format: ergonv1alpha1.WebhookFormatErgon, key: s.decoy.get()}
	trigger := &ergonv1alpha1.Trigger{}
	if err := s.Client.Get(ctx, key, trigger); err != nil {
		if !apierrors.IsNotFound(err) {
			logf.FromContext(ctx).Error(err, "Reading the Trigger")
		}
		v.problem = "there is no Trigger " + key.String()
		return v
	}
	if trigger.Spec.Webhook == nil {
		v.problem = "Trigger " + key.String() + " is not a webhook Trigger"
		return v
	}
	if trigger.Spec.Webhook.Format != "" {
		v.format = trigger.Spec.Webhook.Format
	}
	signingKey, problem := s.signingKey(ctx, trigger)
	if problem != "" {
		v.problem = problem
		return v
	}
	v.trigger, v.key, v.keepBody = trigger, signingKey, len(trigger.Spec.Webhook.Params) > 0
	return v
}

// decoyKey is a random key, made once, that signs nothing anyone has.
type decoyKey struct {
	once sync.Once
	key  []byte
}

func (d *decoyKey) get() []byte {
	d.once.Do(func() { d.key = []byte(rand.Text()) })
	return d.key
}

// signingKey returns the Trigger's key, read from its Secret at most every keyTTL, or why
// there is none. When the Secret cannot be read, the key read last is used.
func (s *Server) signingKey(ctx context.Context, trigger *ergonv1alpha1.Trigger) ([]byte, string) {
	ref := trigger.Spec.Webhook.SecretRef
	cacheKey := trigger.Namespace + "/" + ref.Name + "/" + ref.Key
	now := s.Clock.Now()
	s.mu.Lock()
	cached, ok := s.keys[cacheKey]
	s.mu.Unlock()
	if !ok || !cached.fresh(now) {
		read := cachedKey{readAt: now}
		secret := &corev1.Secret{}
		err := s.SecretReader.Get(ctx, client.ObjectKey{Namespace: trigger.Namespace, Name: ref.Name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			read.problem = "the Trigger's key Secret " + ref.Name + " does not exist"
		case err != nil:
			logf.FromContext(ctx).Error(err, "Reading the key Secret", "secret", ref.Name)
			if ok && cached.key != nil {
				return cached.key, ""
			}
			return nil, "the Trigger's key Secret " + ref.Name + " could not be read"
		case len(secret.Data[ref.Key]) == 0:
			read.problem = "the Trigger's key Secret " + ref.Name + " has no key " + ref.Key
		default:
			read.key = secret.Data[ref.Key]
		}
		s.mu.Lock()
		if s.keys == nil {
			s.keys = map[string]cachedKey{}
		}
		s.keys[cacheKey] = read
		s.mu.Unlock()
		cached = read
	}
	if cached.key == nil {
		return nil, cached.problem
	}
	return cached.key, ""
}

// mapParams evaluates the Trigger's mappings over the JSON body.
func (s *Server) mapParams(trigger *ergonv1alpha1.Trigger, body []byte) (map[string]string, *Refusal) {
	if len(trigger.Spec.Webhook.Params) == 0 {
		return nil, nil
	}
	mappings, err := s.mappings.Get(trigger)
	if err != nil {
		return nil, refuse(http.StatusUnprocessableEntity, "the Trigger's param mappings do not compile: %v", err)
	}
	var parsed any
	if err := json.Unmarshal(body, &parsed); err != nil {
		return nil, refuse(http.StatusUnprocessableEntity, "the body is not JSON (%v), and the Trigger maps params from it", err)
	}
	params, err := mappings.Eval(map[string]any{"body": parsed})
	if err != nil {
		if e, ok := errors.AsType[*expr.Error](err); ok {
			return nil, refuse(http.StatusUnprocessableEntity, "%s: %s", e.Field, e.Detail)
		}
		return nil, refuse(http.StatusUnprocessableEntity, "%v", err)
	}
	return params, nil
}

// reserveStart takes a place for the Run name among the Runs the Trigger may start in a minute
// (cause.Limits.MaxPerMinute), counting those the cache holds and those started a moment ago
// on this replica; a retry of a delivery whose Run exists takes none. It returns how to give
// the place back if the Run is not created after all, or the 429 to answer when the minute is
// full.
func (s *Server) reserveStart(ctx context.Context, trigger *ergonv1alpha1.Trigger, name string, now time.Time) (func(), *answer) {
	nothing := func() {}
	list := &ergonv1alpha1.RunList{}
	// Read only, so the cache's objects need no copies.
	if err := s.Client.List(ctx, list, client.InNamespace(trigger.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{ergonv1alpha1.LabelTrigger: naming.LabelValue(trigger.Name)}); err != nil {
		logf.FromContext(ctx).Error(err, "Listing the Trigger's Runs")
		a := refused(refuse(http.StatusServiceUnavailable, "the Trigger's Runs could not be counted; try again with the same delivery id"))
		return nothing, &a
	}
	var runs []*ergonv1alpha1.Run
	for i := range list.Items {
		run := &list.Items[i]
		if !metav1.IsControlledBy(run, trigger) {
			continue
		}
		if run.Name == name {
			return nothing, nil // a retry: its Run counts already
		}
		runs = append(runs, run)
	}
	seen, frees := cause.StartedWithin(runs, now)
	ledger := s.ledger()
	key := cause.TriggerKey(trigger)
	limits := s.Limits.OrDefaults()
	if n, ok := ledger.Reserve(key, seen, name, limits.MaxPerMinute, now); !ok {
		wait := cause.Window
		if !frees.IsZero() {
			wait = max(frees.Sub(now), time.Second)
		}
		a := busy(http.StatusTooManyRequests, wait, limits.Rate(trigger.Name, n).Message)
		return nothing, &a
	}
	return func() { ledger.Forget(key, name) }, nil
}

// ledger is the record of Runs started a moment ago.
func (s *Server) ledger() *cause.Ledger {
	s.ledgerOnce.Do(func() {
		if s.Ledger == nil {
			s.Ledger = &cause.Ledger{}
		}
	})
	return s.Ledger
}
