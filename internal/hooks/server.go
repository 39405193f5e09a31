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

// Package hooks serves webhook Triggers: POST /hooks/NAMESPACE/TRIGGER with a signed body
// starts a Run of the Trigger's Scene, its params mapped from the JSON body with CEL.
package hooks

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// keyTTL is how long a signing key read from its Secret is used before it is read again: a
// rotated key takes effect within it, and a burst of deliveries costs one API read.
const keyTTL = 10 * time.Second

// sweepEvery is how often the server forgets what it keeps per Trigger and no longer needs.
const sweepEvery = time.Minute

// Server is the webhook endpoint. It runs on every replica of the manager, leader or not.
type Server struct {
	// Client reads Triggers (from the manager's cache) and creates Runs.
	Client client.Client
	// SecretReader reads key Secrets directly: the manager caches no Secrets.
	SecretReader client.Reader
	// Clock checks timestamps and paces the rate limit.
	Clock clock.PassiveClock
	// Addr is the address to listen on, such as :8090.
	Addr string
	// Rate and Burst limit the deliveries each Trigger accepts: Rate per second on average,
	// Burst at once.
	Rate  rate.Limit
	Burst int
	// MaxBodies bounds the bodies read at once over all Triggers (503 beyond), and
	// MaxBodiesPerTrigger those for one path (429 beyond); DefaultMaxBodies and
	// DefaultMaxBodiesPerTrigger when 0. Each body is at most MaxBodyBytes, so they bound the
	// memory anyone can make the server hold before a signature is checked.
	MaxBodies           int
	MaxBodiesPerTrigger int
	// MaxRemembered bounds the signatures remembered to refuse replays (DefaultMaxRemembered
	// when 0); when it is reached, new deliveries get 503 until old ones expire.
	MaxRemembered int
	// RefusalDelay is the least time, from the request's arrival, before the one answer to an
	// unauthenticated delivery goes out (DefaultRefusalDelay when 0, none when negative), so
	// its timing does not tell a Trigger whose key was read from one that is not there.
	RefusalDelay time.Duration
	// Limits caps the Runs a Trigger starts a minute (MaxPerMinute, its default when 0),
	// counted with the Trigger controller's: deliveries, schedules and chained Runs alike.
	Limits cause.Limits
	// Ledger remembers the Runs started a moment ago, which the cache may not hold yet; the
	// manager shares one with its controllers. The server keeps its own when nil.
	Ledger *cause.Ledger

	ledgerOnce sync.Once
	mappings   triggers.MappingCache
	slots      bodySlots
	replays    replays
	decoy      decoyKey
	mu         sync.Mutex
	limiters   map[types.UID]*rate.Limiter
	keys       map[string]cachedKey
	records    map[types.NamespacedName]*pendingRecord
}

type cachedKey struct {
	key     []byte // nil when the Secret or its key is missing
	readAt  time.Time
	problem string
}

// fresh says whether the key was read within keyTTL before now (a clock that went back makes
// it stale too).
func (k cachedKey) fresh(now time.Time) bool {
	return !now.Before(k.readAt) && now.Sub(k.readAt) <= keyTTL
}

// Response bodies.
type accepted struct {
	Run       string `json:"run"`
	Namespace string `json:"namespace"`
}

type failure struct {
	Error string `json:"error"`
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hooks/{namespace}/{trigger}", s.serveDelivery)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, failure{Error: "not found: deliveries go to POST /hooks/NAMESPACE/TRIGGER"})
	})
	return mux
}

// Start serves until ctx ends; it is a manager Runnable.
func (s *Server) Start(ctx context.Context) error {
	srv := &http.Server{
		Addr:              s.Addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	go s.sweepUntil(ctx)
	logf.FromContext(ctx).Info("Serving webhook Triggers", "address", s.Addr)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}

// sweepUntil forgets, every sweepEvery until ctx ends, what the server keeps for Triggers that
// are idle or gone, so a long-lived manager does not grow with every Trigger it ever served.
func (s *Server) sweepUntil(ctx context.Context) {
	ticker := time.NewTicker(sweepEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		list := &ergonv1alpha1.TriggerList{}
		if err := s.Client.List(ctx, list); err != nil {
			logf.FromContext(ctx).Error(err, "Listing Triggers to forget the deleted ones")
			continue
		}
		live := make(map[types.NamespacedName]bool, len(list.Items))
		for i := range list.Items {
			live[types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}] = true
		}
		s.forget(s.Clock.Now(), func(key types.NamespacedName) bool { return live[key] })
	}
}

// forget drops signing keys older than keyTTL (they would be read again anyway), rate limiters
// that are full (a new one is the same), signatures whose timestamps are stale, and the
// mappings of Triggers exists denies.
func (s *Server) forget(now time.Time, exists func(types.NamespacedName) bool) {
	s.mu.Lock()
	for k, cached := range s.keys {
		if !cached.fresh(now) {
			delete(s.keys, k)
		}
	}
	for uid, limiter := range s.limiters {
		if limiter.TokensAt(now) >= float64(limiter.Burst()) {
			delete(s.limiters, uid)
		}
	}
	s.mu.Unlock()
	s.replays.forget(now)
	s.mappings.Prune(exists)
}

// NeedLeaderElection is false: every replica accepts deliveries; Run names keep them exact.
func (s *Server) NeedLeaderElection() bool {
	return false
}

func seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// reserve takes a token from the Trigger's rate limit, or says how long until one is free.
func (s *Server) reserve(trigger *ergonv1alpha1.Trigger, now time.Time) time.Duration {
	s.mu.Lock()
	if s.limiters == nil {
		s.limiters = map[types.UID]*rate.Limiter{}
	}
	limiter, ok := s.limiters[trigger.UID]
	if !ok {
		limiter = rate.NewLimiter(s.Rate, s.Burst)
		s.limiters[trigger.UID] = limiter
	}
	s.mu.Unlock()
	r := limiter.ReserveN(now, 1)
	if !r.OK() {
		return time.Second
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}

// recordDelivery writes the delivery into the Trigger's status, in the background. Writes to
// one Trigger are serialized by the API server, so one write per delivery would bound a
// Trigger's deliveries to the rate one object can be written at; instead at most one write per
// Trigger is in flight, and it writes the latest delivery. A failure is logged: the Run is
// created, and the delivery succeeded.
func (s *Server) recordDelivery(ctx context.Context, trigger *ergonv1alpha1.Trigger, d Delivery, run string, now time.Time) {
	key := types.NamespacedName{Namespace: trigger.Namespace, Name: trigger.Name}
	delivery := &ergonv1alpha1.WebhookDelivery{ID: d.ID, Time: &metav1.Time{Time: now}, Run: run}
	s.mu.Lock()
	if s.records == nil {
		s.records = map[types.NamespacedName]*pendingRecord{}
	}
	p, ok := s.records[key]
	if !ok {
		p = &pendingRecord{}
		s.records[key] = p
	}
	p.latest = delivery
	writing := p.writing
	p.writing = true
	s.mu.Unlock()
	if writing {
		return
	}
	log := logf.FromContext(ctx).WithValues("trigger", key.String())
	go func() {
		for {
			s.mu.Lock()
			next := p.latest
			p.latest = nil
			if next == nil {
				p.writing = false
				delete(s.records, key)
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			if err := s.patchLastDelivery(key, next); err != nil {
				log.Error(err, "Recording the delivery in the Trigger's status", "run", next.Run)
			}
		}
	}()
}

// pendingRecord is the delivery waiting to be written into a Trigger's status.
type pendingRecord struct {
	latest  *ergonv1alpha1.WebhookDelivery
	writing bool
}

func (s *Server) patchLastDelivery(key types.NamespacedName, d *ergonv1alpha1.WebhookDelivery) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, err := json.Marshal(map[string]any{"status": map[string]any{"lastDelivery": d}})
	if err != nil {
		return err
	}
	trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return client.IgnoreNotFound(s.Client.Status().Patch(ctx, trigger, client.RawPatch(types.MergePatchType, data)))
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
