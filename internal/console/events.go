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

package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// keepAlive is how often an idle stream sends a comment, so proxies do not close it.
const keepAlive = 20 * time.Second

// change is one event of a live stream.
type change struct {
	Kind   string        `json:"kind"`
	Type   string        `json:"type,omitempty"`
	Object client.Object `json:"object,omitempty"`
	// Error says why a kind cannot be watched (RBAC's message), or why the stream ended.
	Error string `json:"error,omitempty"`
	// Watching is set once a kind's watch has started.
	Watching bool `json:"watching,omitempty"`
	// Summary is a Run's, which goes instead of the Run.
	Summary *RunSummary `json:"summary,omitempty"`
}

// watchedKind is a kind a stream watches.
type watchedKind struct {
	kind string
	list func() client.ObjectList
}

var watchedKinds = []watchedKind{
	{"Run", func() client.ObjectList { return &ergonv1alpha1.RunList{} }},
	{"Gate", func() client.ObjectList { return &ergonv1alpha1.GateList{} }},
	{"Trigger", func() client.ObjectList { return &ergonv1alpha1.TriggerList{} }},
	{"Workspace", func() client.ObjectList { return &ergonv1alpha1.WorkspaceList{} }},
}

// acquireStream counts a stream against the global and per-session limits.
func (s *Server) acquireStream(session string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams >= s.cfg.MaxStreams {
		return nil, fmt.Errorf("the console already serves %d live streams; try again later", s.streams)
	}
	if session != "" && s.sessions[session] >= s.cfg.MaxStreamsPerSession {
		return nil, fmt.Errorf("this session already has %d live streams open; close some tabs", s.sessions[session])
	}
	s.streams++
	s.sessions[session]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.streams--
		if s.sessions[session]--; s.sessions[session] <= 0 {
			delete(s.sessions, session)
		}
	}, nil
}

// events streams the changes of a namespace's Runs, Gates, Triggers and Workspaces as
// server-sent events. Each stream watches with the viewer's own token: the API server decides
// what each viewer sees, event by event, exactly as for kubectl get -w, and the console keeps
// no cache: it holds one watch per kind per open page, and passes events through. A Run goes
// as its summary: the lists need no more, and a page showing one Run follows it on a stream
// of its own (runEvents).
func (s *Server) events(w http.ResponseWriter, r *http.Request, v *viewer) {
	s.serveStream(w, r, v, func(ctx context.Context, out chan<- sse) {
		changes := make(chan change, 64)
		for _, k := range watchedKinds {
			go watchKind(ctx, v, r.PathValue("ns"), k, changes)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-changes:
				// A watch that ended ends the stream; the browser reconnects and reloads.
				if !send(ctx, out, sse{name: "change", data: c, last: c.Kind == "" && c.Error != ""}) {
					return
				}
			}
		}
	})
}

// sse is one server-sent event; last ends the stream after it.
type sse struct {
	name string
	data any
	last bool
}

func send(ctx context.Context, out chan<- sse, e sse) bool {
	select {
	case out <- e:
		return !e.last
	case <-ctx.Done():
		return false
	}
}

// serveStream serves a stream of server-sent events that produce sends until it returns or
// the request ends, counted against the console's limits on open streams.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, v *viewer, produce func(ctx context.Context, out chan<- sse)) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("this server cannot stream"))
		return
	}
	session := ""
	if !v.readOnly {
		session = s.sessionID(v.token)
	}
	release, err := s.acquireStream(session)
	if err != nil {
		writeError(w, http.StatusTooManyRequests, err)
		return
	}
	defer release()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan sse, 16)
	go func() {
		defer close(events)
		produce(ctx, events)
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
		case e, ok := <-events:
			if !ok {
				return
			}
			b, err := json.Marshal(e.data)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b); err != nil {
				return
			}
			if e.last {
				flusher.Flush()
				return
			}
		}
		flusher.Flush()
	}
}

// watchKind watches one kind of a namespace as the viewer from now on and sends its changes.
// A kind the viewer may not watch sends RBAC's message once; a watch the API server ends
// sends an error without kind, which ends the stream.
func watchKind(ctx context.Context, v *viewer, ns string, k watchedKind, out chan<- change) {
	send := func(c change) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	list := k.list()
	if err := v.c.List(ctx, list, client.InNamespace(ns), client.Limit(1)); err != nil {
		send(change{Kind: k.kind, Error: err.Error()})
		return
	}
	rv := list.(metav1.ListInterface).GetResourceVersion()
	wi, err := v.c.Watch(ctx, k.list(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		send(change{Kind: k.kind, Error: err.Error()})
		return
	}
	defer wi.Stop()
	if !send(change{Kind: k.kind, Watching: true}) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				send(change{Error: "the API server ended the watch of " + k.kind + "s"})
				return
			}
			if ev.Type == watch.Error || ev.Type == watch.Bookmark {
				if ev.Type == watch.Error {
					send(change{Error: "the watch of " + k.kind + "s failed"})
					return
				}
				continue
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			c := change{Kind: k.kind, Type: string(ev.Type), Object: obj}
			if run, ok := obj.(*ergonv1alpha1.Run); ok {
				sum := Summarize(run)
				c.Object, c.Summary = nil, &sum
			} else {
				slim(obj)
			}
			if !send(c) {
				return
			}
		}
	}
}
