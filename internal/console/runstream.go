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
	"hash/fnv"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// RunDelta is one event of a Run's stream: the Run without its steps, and of its steps only
// those that changed since the stream's previous event.
type RunDelta struct {
	// Type is the watch's: ADDED (the first event of a stream), MODIFIED or DELETED.
	Type string `json:"type"`
	// Run is the Run with no steps and no snapshot.
	Run *ergonv1alpha1.Run `json:"run,omitempty"`
	// Full says Steps is every step: the stream's first event, after which the page forgets
	// what it had.
	Full bool `json:"full,omitempty"`
	// Steps are the steps that are new or changed.
	Steps []ergonv1alpha1.StepStatus `json:"steps,omitempty"`
	// Removed names the steps the Run no longer records.
	Removed []string `json:"removed,omitempty"`
	// Error says why the Run cannot be watched (RBAC's message), or why the stream ended.
	Error string `json:"error,omitempty"`
}

// runEvent names the events of a Run's stream.
const runEvent = "run"

// stepDigests remembers what a stream last sent of each step.
type stepDigests map[string]uint64

// diff is the steps that changed since the digests were taken, and those gone; it updates
// the digests.
func (d stepDigests) diff(steps []ergonv1alpha1.StepStatus) (changed []ergonv1alpha1.StepStatus, removed []string) {
	seen := make(map[string]bool, len(steps))
	for i := range steps {
		b, err := json.Marshal(&steps[i])
		if err != nil {
			continue
		}
		h := fnv.New64a()
		_, _ = h.Write(b)
		sum := h.Sum64()
		seen[steps[i].Name] = true
		if old, ok := d[steps[i].Name]; !ok || old != sum {
			d[steps[i].Name] = sum
			changed = append(changed, steps[i])
		}
	}
	for name := range d {
		if !seen[name] {
			delete(d, name)
			removed = append(removed, name)
		}
	}
	return changed, removed
}

// delta makes the event for a Run's new state, against what the stream sent before.
func (d stepDigests) delta(typ watch.EventType, run *ergonv1alpha1.Run, first bool) RunDelta {
	if typ == watch.Deleted {
		return RunDelta{Type: string(typ)}
	}
	changed, removed := d.diff(run.Status.Steps)
	slim(run)
	run.Status.SceneSnapshot = nil
	run.Status.Steps = nil
	return RunDelta{Type: string(typ), Run: run, Full: first, Steps: changed, Removed: removed}
}

// runEvents streams one Run's changes, watched with the viewer's own token as events does:
// the first event carries every step, each next one only the steps that changed, so a page
// showing a 1,000-step Run reads a step's change, not the whole Run again.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, v *viewer) {
	s.serveStream(w, r, v, func(ctx context.Context, out chan<- sse) {
		ns, name := r.PathValue("ns"), r.PathValue("name")
		fail := func(msg string) { send(ctx, out, sse{name: runEvent, data: RunDelta{Error: msg}, last: true}) }
		one := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}
		var list ergonv1alpha1.RunList
		if err := v.c.List(ctx, &list, client.InNamespace(ns), one); err != nil {
			fail(err.Error())
			return
		}
		digests := stepDigests{}
		if len(list.Items) == 0 {
			send(ctx, out, sse{name: runEvent, data: RunDelta{Type: string(watch.Deleted)}, last: true})
			return
		}
		if !send(ctx, out, sse{name: runEvent, data: digests.delta(watch.Added, &list.Items[0], true)}) {
			return
		}
		wi, err := v.c.Watch(ctx, &ergonv1alpha1.RunList{}, client.InNamespace(ns), one,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			fail(err.Error())
			return
		}
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok || ev.Type == watch.Error {
					fail("the watch of Run " + name + " ended")
					return
				}
				run, ok := ev.Object.(*ergonv1alpha1.Run)
				if !ok || ev.Type == watch.Bookmark {
					continue
				}
				if !send(ctx, out, sse{name: runEvent, data: digests.delta(ev.Type, run, false), last: ev.Type == watch.Deleted}) {
					return
				}
			}
		}
	})
}
