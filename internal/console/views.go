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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/kubectlergon"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/tracing"
)

const (
	// maxInboxNamespaces bounds the namespaces the page may name for the inbox, and
	// maxInboxReviews the access reviews one search of it asks (the oldest Gates first).
	maxInboxNamespaces = 20
	maxInboxReviews    = 200
	// maxNamespaces bounds the namespaces the switcher asks access reviews for.
	maxNamespaces = 200
	// logTailLines and logLimitBytes bound the pod log a step's panel shows.
	logTailLines  = 1000
	logLimitBytes = 1 << 20
	// itemsKey holds the objects of a list answer.
	itemsKey = "items"
)

// namespaces are those the viewer may list Runs in: the namespaces they may list, each
// checked with a SelfSubjectAccessReview. A viewer who may not list namespaces gets the
// console's default namespace and types others in.
func (s *Server) namespaces(w http.ResponseWriter, r *http.Request, v *viewer) {
	var list corev1.NamespaceList
	if err := v.c.List(r.Context(), &list, client.Limit(maxNamespaces)); err != nil {
		if apierrors.IsForbidden(err) {
			writeJSON(w, map[string]any{"namespaces": []string{s.cfg.DefaultNamespace}, "canList": false})
			return
		}
		writeAPIError(w, err)
		return
	}
	allowed := make([]bool, len(list.Items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range list.Items {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			allowed[i] = mayListRuns(r.Context(), v, list.Items[i].Name)
		}(i)
	}
	wg.Wait()
	names := []string{}
	for i, ns := range list.Items {
		if allowed[i] {
			names = append(names, ns.Name)
		}
	}
	writeJSON(w, map[string]any{"namespaces": names, "canList": true})
}

func mayListRuns(ctx context.Context, v *viewer, ns string) bool {
	rev, err := v.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "list", Group: ergonv1alpha1.GroupVersion.Group, Resource: "runs"}},
	}, metav1.CreateOptions{})
	return err == nil && rev.Status.Allowed
}

// slim drops what the page never shows and would only make answers and events larger.
func slim(o client.Object) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
	}
}

// writeItems answers with a list's items, slimmed and sorted by cmp.
func writeItems[T any, PT interface {
	*T
	client.Object
}](w http.ResponseWriter, items []T, cmp func(a, b PT) int) {
	for i := range items {
		slim(PT(&items[i]))
	}
	slices.SortFunc(items, func(a, b T) int { return cmp(&a, &b) })
	writeJSON(w, map[string]any{itemsKey: items})
}

func (s *Server) scenes(w http.ResponseWriter, r *http.Request, v *viewer) {
	var list ergonv1alpha1.SceneList
	if err := v.c.List(r.Context(), &list, client.InNamespace(r.PathValue("ns"))); err != nil {
		writeAPIError(w, err)
		return
	}
	writeItems(w, list.Items, func(a, b *ergonv1alpha1.Scene) int { return strings.Compare(a.Name, b.Name) })
}

func (s *Server) scene(w http.ResponseWriter, r *http.Request, v *viewer) {
	var scene ergonv1alpha1.Scene
	if err := v.c.Get(r.Context(), client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}, &scene); err != nil {
		writeAPIError(w, err)
		return
	}
	slim(&scene)
	writeJSON(w, map[string]any{kindScene: &scene, "graph": SceneGraph(&scene.Spec, nil)})
}

// runs lists Runs as summaries, newest first, filtered by Scene, Trigger and phase.
func (s *Server) runs(w http.ResponseWriter, r *http.Request, v *viewer) {
	opts := []client.ListOption{client.InNamespace(r.PathValue("ns"))}
	if t := r.URL.Query().Get("trigger"); t != "" {
		opts = append(opts, client.MatchingLabels{ergonv1alpha1.LabelTrigger: t})
	}
	var list ergonv1alpha1.RunList
	if err := v.c.List(r.Context(), &list, opts...); err != nil {
		writeAPIError(w, err)
		return
	}
	scene, phase := r.URL.Query().Get("scene"), r.URL.Query().Get("phase")
	items := []RunSummary{}
	for i := range list.Items {
		sum := Summarize(&list.Items[i])
		if (scene == "" || sum.Scene == scene) && (phase == "" || sum.Phase == phase) {
			items = append(items, sum)
		}
	}
	slices.SortFunc(items, func(a, b RunSummary) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	writeJSON(w, map[string]any{itemsKey: items})
}

// run is a Run with its Scene snapshot, its graph coloured by phase and its Gates: live, or
// from the archive when it is gone from the cluster (or ?uid= names an archived one).
func (s *Server) run(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx := r.Context()
	l, err := loadRun(r, v)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	run := l.run
	spec := run.Status.SceneSnapshot
	graphErr := ""
	if l.rec == nil {
		// A snapshot the viewer may not read (a large one is in a ConfigMap, and a viewer may
		// hold Ergon's kinds without ConfigMaps) costs the page its graph, not the Run.
		if spec, err = snapshotOf(ctx, v, run); err != nil {
			graphErr = "The graph needs the Run's snapshot: " + err.Error()
		}
	}
	gateErr := ""
	gates, err := l.gates(ctx, v)
	if err != nil {
		gateErr = err.Error()
	}
	run.Status.SceneSnapshot = nil
	// Of the snapshot, the page needs the graph and the params a rerun may change: a large
	// Scene's specs would only make the answer slower to send and to read.
	var params []ergonv1alpha1.ParamSpec
	if spec != nil {
		params = spec.Params
	}
	answer := map[string]any{"run": run, "params": params, "graph": SceneGraph(spec, run.Status.Steps),
		"graphError": graphErr, "gates": gates, "gatesError": gateErr}
	if l.rec != nil {
		answer["archived"] = map[string]any{"archivedAt": l.rec.ArchivedAt, "missing": l.rec.Missing}
	}
	if u := s.cfg.TraceURL; u != "" {
		answer["traceURL"] = strings.ReplaceAll(u, traceIDPlaceholder, tracing.RunContext(run).TraceID().String())
	}
	writeJSON(w, answer)
}

// traceIDPlaceholder stands for a Run's trace id in Config.TraceURL.
const traceIDPlaceholder = "{traceId}"

// snapshotOf is the Scene spec a Run executes: inline, or from its snapshot ConfigMap.
func snapshotOf(ctx context.Context, v *viewer, run *ergonv1alpha1.Run) (*ergonv1alpha1.SceneSpec, error) {
	if run.Status.SceneSnapshot != nil {
		return run.Status.SceneSnapshot, nil
	}
	ref := run.Status.SceneSnapshotRef
	if ref == nil {
		return nil, nil
	}
	var cm corev1.ConfigMap
	if err := v.c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: ref.ConfigMap}, &cm); err != nil {
		return nil, err
	}
	value, ok := outputs.ConfigMapValue(&cm, ref.Key)
	if !ok {
		return nil, fmt.Errorf("the snapshot ConfigMap %s has no key %q", ref.ConfigMap, ref.Key)
	}
	b := []byte(value)
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != run.Status.SceneSnapshotSHA256 {
		return nil, fmt.Errorf("the snapshot ConfigMap %s does not hold the snapshot Run %s recorded (SHA-256 %s)",
			ref.ConfigMap, run.Name, run.Status.SceneSnapshotSHA256)
	}
	spec := &ergonv1alpha1.SceneSpec{}
	return spec, json.Unmarshal(b, spec)
}

// loadStep loads the Run the request names, live or archived (loadRun), and the status of its
// step the path names.
func loadStep(r *http.Request, v *viewer) (*loadedRun, *ergonv1alpha1.StepStatus, error) {
	l, err := loadRun(r, v)
	if err != nil {
		return nil, nil, err
	}
	st, err := stepOf(l.run, r.PathValue("step"))
	return l, st, err
}

func stepOf(run *ergonv1alpha1.Run, name string) (*ergonv1alpha1.StepStatus, error) {
	for i := range run.Status.Steps {
		if run.Status.Steps[i].Name == name {
			return &run.Status.Steps[i], nil
		}
	}
	return nil, apierrors.NewNotFound(ergonv1alpha1.GroupVersion.WithResource("runs").GroupResource(),
		run.Name+": step "+name+" has not started")
}

// writeText answers with text the browser can only show as text: text/plain, no sniffing,
// and a sandbox CSP in case someone opens the address itself.
func writeText(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
	_, _ = w.Write(b)
}

func (s *Server) stepValue(w http.ResponseWriter, r *http.Request, v *viewer, pick func(*ergonv1alpha1.StepStatus) *ergonv1alpha1.OutputValue, what string) {
	l, st, err := loadStep(r, v)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	val := pick(st)
	if val == nil {
		missing := "output"
		if what != "" {
			missing = what + " (only agent steps have one, once an attempt ended)"
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("step %s has no %s", st.Name, missing))
		return
	}
	b, err := l.value(r.Context(), v, st.Name, val, what)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeText(w, b)
}

func (s *Server) stepOutput(w http.ResponseWriter, r *http.Request, v *viewer) {
	s.stepValue(w, r, v, func(st *ergonv1alpha1.StepStatus) *ergonv1alpha1.OutputValue { return st.Output }, "")
}

// stepTranscript is an agent step's transcript as its JSON; the page renders it as text.
func (s *Server) stepTranscript(w http.ResponseWriter, r *http.Request, v *viewer) {
	s.stepValue(w, r, v, func(st *ergonv1alpha1.StepStatus) *ergonv1alpha1.OutputValue { return st.Transcript }, outputs.KeyTranscript)
}

// stepLog is the end of the log of a step's pod, of the last attempt or ?attempt=N, while
// the pod exists; framed outputs are shown as one line each.
func (s *Server) stepLog(w http.ResponseWriter, r *http.Request, v *viewer) {
	l, st, err := loadStep(r, v)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	run := l.run
	attempt, _ := strconv.Atoi(r.URL.Query().Get("attempt"))
	pod, err := kubectlergon.PodOfAttempt(st, int32(attempt))
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	if l.rec != nil {
		text, ok := l.rec.Logs[pod]
		if !ok {
			writeError(w, http.StatusNotFound, errors.New("the archive kept no log of the pod "+pod+": it was gone when the Run was archived"))
			return
		}
		writeText(w, []byte(strings.Join(wire.StripFrames(strings.NewReader(text)), "\n")))
		return
	}
	tail, limit := int64(logTailLines), int64(logLimitBytes)
	rc, err := v.cs.CoreV1().Pods(run.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "step", TailLines: &tail, LimitBytes: &limit}).Stream(r.Context())
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = errors.New("the pod " + pod + " is gone: Ergon deletes the pods of finished attempts; the output and transcript stay with the Run")
			writeError(w, http.StatusNotFound, err)
			return
		}
		writeAPIError(w, err)
		return
	}
	defer func() { _ = rc.Close() }()
	writeText(w, []byte(strings.Join(wire.StripFrames(rc), "\n")))
}

func (s *Server) gates(w http.ResponseWriter, r *http.Request, v *viewer) {
	var list ergonv1alpha1.GateList
	if err := v.c.List(r.Context(), &list, client.InNamespace(r.PathValue("ns"))); err != nil {
		writeAPIError(w, err)
		return
	}
	writeItems(w, list.Items, func(a, b *ergonv1alpha1.Gate) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
}

// inbox lists the open Gates the viewer may answer or decide, oldest first, in every namespace
// they may list Gates in: cluster-wide when they may, else namespace by namespace (every
// namespace when they may list namespaces, else the console's default one and those the page
// names in ?namespaces=a,b, the ones it knows of). Everything is asked with the viewer's own
// token, so the page can show no more than the viewer may see; a read-only viewer decides
// nothing.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request, v *viewer) {
	items := []ergonv1alpha1.Gate{}
	if v.readOnly {
		writeJSON(w, map[string]any{itemsKey: items})
		return
	}
	pending, _, err := kubectlergon.PendingForAtMost(r.Context(), v.c, "", maxInboxReviews)
	if apierrors.IsForbidden(err) {
		pending, err = nil, nil
		var list corev1.NamespaceList
		names := []string{s.cfg.DefaultNamespace}
		if v.c.List(r.Context(), &list, client.Limit(maxNamespaces)) == nil {
			names = names[:0]
			for _, ns := range list.Items {
				names = append(names, ns.Name)
			}
		} else {
			for ns := range strings.SplitSeq(r.URL.Query().Get("namespaces"), ",") {
				if ns != "" && len(names) < maxInboxNamespaces && !slices.Contains(names, ns) &&
					len(validation.IsDNS1123Label(ns)) == 0 {
					names = append(names, ns)
				}
			}
		}
		budget := maxInboxReviews // one budget for the whole search
		for _, ns := range names {
			if budget <= 0 {
				break
			}
			found, asked, nsErr := kubectlergon.PendingForAtMost(r.Context(), v.c, ns, budget)
			if nsErr != nil && !apierrors.IsForbidden(nsErr) {
				err = nsErr
				break
			}
			budget -= max(asked, 1) // a namespace costs a list and a review of who asks, at least
			pending = append(pending, found...)
		}
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	for _, g := range pending {
		items = append(items, *g)
	}
	writeItems(w, items, func(a, b *ergonv1alpha1.Gate) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
}

func (s *Server) triggers(w http.ResponseWriter, r *http.Request, v *viewer) {
	var list ergonv1alpha1.TriggerList
	if err := v.c.List(r.Context(), &list, client.InNamespace(r.PathValue("ns"))); err != nil {
		writeAPIError(w, err)
		return
	}
	writeItems(w, list.Items, func(a, b *ergonv1alpha1.Trigger) int { return strings.Compare(a.Name, b.Name) })
}

func (s *Server) workspaces(w http.ResponseWriter, r *http.Request, v *viewer) {
	var list ergonv1alpha1.WorkspaceList
	if err := v.c.List(r.Context(), &list, client.InNamespace(r.PathValue("ns"))); err != nil {
		writeAPIError(w, err)
		return
	}
	writeItems(w, list.Items, func(a, b *ergonv1alpha1.Workspace) int { return strings.Compare(a.Name, b.Name) })
}
