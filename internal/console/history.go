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
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/archiveapi"
	"github.com/ergon-dev/ergon/internal/kubectlergon"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// The Runs view lists live and archived Runs together. The archive is read through the API
// server with the viewer's own token (its aggregated API checks that they may get Runs in
// each namespace, inside its query); live Runs are listed with the same token. A Run the
// archive holds is shown once: the archive's filters decide whether it matches (they search
// whole outputs), and the live object, when it still exists, is what the page links to.

// historyQuery is a search of the Runs view: the archive's filters, and the namespace.
type historyQuery struct {
	namespace                         string // empty: every namespace the viewer may read
	home                              string // the page's namespace, for live Runs when the viewer may not list them everywhere
	scene, phase, startedBy, trigger  string
	selector                          labels.Selector
	labelSelector, sinceRaw, untilRaw string
	since, until                      time.Time
	text, after                       string
	limit                             int
}

func historyQueryOf(r *http.Request) (*historyQuery, error) {
	v := r.URL.Query()
	q := &historyQuery{namespace: v.Get("namespace"), home: v.Get("home"), scene: v.Get("scene"), phase: v.Get("phase"),
		startedBy: v.Get("startedBy"), trigger: v.Get("trigger"), labelSelector: v.Get("label"), sinceRaw: v.Get("since"),
		untilRaw: v.Get("until"), text: v.Get("text"), after: v.Get("continue"), limit: archive.DefaultLimit}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("limit: want a positive count, not %q", l)
		}
		q.limit = min(n, archive.MaxLimit)
	}
	var err error
	if q.selector, err = labels.Parse(q.labelSelector); err != nil {
		return nil, fmt.Errorf("label: %w", err)
	}
	if q.since, err = archiveapi.ParseTime("since", q.sinceRaw); err != nil {
		return nil, err
	}
	if q.until, err = archiveapi.ParseTime("until", q.untilRaw); err != nil {
		return nil, err
	}
	return q, nil
}

// matches says whether a live Run that is not archived matches the search: the archive's
// filters, applied to the object (text to its name, params, output previews and messages). A
// time range bounds when the Run finished; one still going finishes after now.
func (q *historyQuery) matches(run *ergonv1alpha1.Run) bool {
	sum := Summarize(run)
	switch {
	case q.scene != "" && sum.Scene != q.scene,
		q.phase != "" && sum.Phase != q.phase,
		q.trigger != "" && sum.Trigger != q.trigger,
		q.startedBy != "" && run.Annotations[ergonv1alpha1.AnnotationCreatedBy] != q.startedBy,
		!q.selector.Matches(labels.Set(run.Labels)):
		return false
	}
	finished := time.Now()
	if sum.Finished != nil {
		finished = *sum.Finished
	} else if !q.until.IsZero() && q.until.Before(finished) {
		return false
	}
	if !q.since.IsZero() && finished.Before(q.since) || !q.until.IsZero() && !finished.Before(q.until) {
		return false
	}
	return q.text == "" || runHasText(run, strings.ToLower(q.text))
}

// runHasText says whether a live Run holds a lower-cased term in the text the archive
// searches, with its outputs' previews for values.
func runHasText(run *ergonv1alpha1.Run, text string) bool {
	previews := map[string]string{}
	for _, s := range run.Status.Steps {
		if s.Output != nil {
			previews[s.Name] = s.Output.Preview
		}
	}
	return strings.Contains(archive.SearchText(run, previews), text)
}

// history answers a search of the Runs view: on the first page the live Runs the archive does
// not hold yet, then the archive's page, newest first; the continue token pages the archive.
// When the archive cannot be read, archiveError says why and the live Runs are still listed.
func (s *Server) history(w http.ResponseWriter, r *http.Request, v *viewer) {
	q, err := historyQueryOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	archived, cont, archiveErr := s.archivePage(r.Context(), v, q)
	if archiveErr != nil && !errors.Is(archiveErr, errArchiveUnreachable) {
		writeAPIError(w, archiveErr)
		return
	}
	items := []RunSummary{}
	if q.after == "" {
		live, err := s.liveRuns(r.Context(), v, q)
		// Live Runs the viewer may not list are left out when the archive answered.
		if err != nil && (!apierrors.IsForbidden(err) || archiveErr != nil) {
			writeAPIError(w, err)
			return
		}
		byUID := map[string]*ergonv1alpha1.Run{}
		for i := range live {
			byUID[string(live[i].UID)] = &live[i]
		}
		// An archived Run still in the cluster is shown as the live object.
		for i, it := range archived {
			if run, ok := byUID[it.UID]; ok {
				archived[i] = Summarize(run)
				delete(byUID, it.UID)
			}
		}
		for i := range live {
			run := &live[i]
			if byUID[string(run.UID)] == nil {
				continue
			}
			// A Run the archive holds is matched by the archive's query, on its whole values.
			held := meta.IsStatusConditionTrue(run.Status.Conditions, ergonv1alpha1.ConditionArchived)
			if held && archiveErr == nil || !q.matches(run) {
				continue
			}
			items = append(items, Summarize(run))
		}
	}
	items = append(items, archived...)
	slices.SortStableFunc(items, newestFirst)
	answer := map[string]any{itemsKey: items, "continue": cont}
	if archiveErr != nil {
		answer["archiveError"] = archiveErr.Error()
	}
	writeJSON(w, answer)
}

// newestFirst puts Runs still going first, newest first, then ended ones by when they ended.
func newestFirst(a, b RunSummary) int {
	switch {
	case a.Finished == nil && b.Finished != nil:
		return -1
	case a.Finished != nil && b.Finished == nil:
		return 1
	case a.Finished == nil:
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
	default:
		if c := b.Finished.Compare(*a.Finished); c != 0 {
			return c
		}
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

var errArchiveUnreachable = errors.New("the Run archive is not reachable")

// archivePage reads a page of the archive as the viewer.
func (s *Server) archivePage(ctx context.Context, v *viewer, q *historyQuery) ([]RunSummary, string, error) {
	params := url.Values{}
	for k, val := range map[string]string{"scene": q.scene, "phase": q.phase, "startedBy": q.startedBy, "trigger": q.trigger,
		"labelSelector": q.labelSelector, "since": q.sinceRaw, "until": q.untilRaw, "text": q.text, "continue": q.after,
		"limit": strconv.Itoa(q.limit)} {
		params.Set(k, val)
	}
	if q.phase != "" && !ergonv1alpha1.RunPhase(q.phase).Finished() {
		return nil, "", nil // archived Runs have ended
	}
	list, err := archiveapi.List(ctx, v.cs.CoreV1().RESTClient(), q.namespace, params)
	if err != nil {
		if archiveapi.Unreachable(err) {
			return nil, "", fmt.Errorf("%w (%v): only live Runs are listed", errArchiveUnreachable, err)
		}
		return nil, "", err
	}
	out := make([]RunSummary, 0, len(list.Items))
	for _, it := range list.Items {
		sum := it.Summary
		finished := sum.FinishedAt
		out = append(out, RunSummary{Namespace: sum.Namespace, Name: sum.Name, UID: sum.UID, Scene: sum.Scene,
			Trigger: sum.Trigger, Phase: sum.Phase, Created: sum.CreatedAt, Finished: &finished, StartedBy: sum.StartedBy,
			Archived: true})
	}
	return out, list.Continue, nil
}

// liveRuns lists the Runs of the search's namespace; across namespaces, every Run when the
// viewer may list them cluster-wide, else those of the page's own namespace.
func (s *Server) liveRuns(ctx context.Context, v *viewer, q *historyQuery) ([]ergonv1alpha1.Run, error) {
	var list ergonv1alpha1.RunList
	err := v.c.List(ctx, &list, client.InNamespace(q.namespace))
	if q.namespace == "" && apierrors.IsForbidden(err) && q.home != "" {
		err = v.c.List(ctx, &list, client.InNamespace(q.home))
	}
	return list.Items, err
}

// loadedRun is a Run the console shows: live, or from the archive (rec set) when it is gone
// from the cluster or the page asks for an older one of the name by its UID.
type loadedRun struct {
	run *ergonv1alpha1.Run
	rec *archive.Record
}

// loadRun reads the Run a request names: {ns}, {name} and ?uid=.
func loadRun(r *http.Request, v *viewer) (*loadedRun, error) {
	return loadRunAt(r.Context(), v, r.PathValue("ns"), r.PathValue("name"), r.URL.Query().Get("uid"))
}

func loadRunAt(ctx context.Context, v *viewer, ns, name, uid string) (*loadedRun, error) {
	run := &ergonv1alpha1.Run{}
	err := v.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)
	if err == nil && (uid == "" || string(run.UID) == uid) {
		slim(run)
		return &loadedRun{run: run}, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	item, aerr := archiveapi.Get(ctx, v.cs.CoreV1().RESTClient(), ns, name, uid)
	switch {
	case aerr == nil:
		return &loadedRun{run: item.Record.Original(), rec: item.Record}, nil
	case archiveapi.Unreachable(aerr) && err != nil:
		return nil, err // not in the cluster, and no archive to look in: the API server's 404
	case archiveapi.Unreachable(aerr):
		return nil, apierrors.NewNotFound(ergonv1alpha1.GroupVersion.WithResource("runs").GroupResource(), name+" with UID "+uid)
	}
	return nil, aerr
}

// value reads a whole output or transcript of the Run, checked against its recorded size and
// digest: from its ConfigMap, or from the archive's record.
func (l *loadedRun) value(ctx context.Context, v *viewer, step string, val *ergonv1alpha1.OutputValue, what string) ([]byte, error) {
	if l.rec == nil {
		return outputs.Read(ctx, v.c, l.run.Namespace, val)
	}
	return outputs.Archived(l.rec, step, what, val)
}

// gates are the Run's Gates: those it controls in the cluster, or the record's.
func (l *loadedRun) gates(ctx context.Context, v *viewer) ([]ergonv1alpha1.Gate, error) {
	if l.rec != nil {
		return l.rec.Gates, nil
	}
	var list ergonv1alpha1.GateList
	if err := v.c.List(ctx, &list, client.InNamespace(l.run.Namespace)); err != nil {
		return nil, err
	}
	own := []ergonv1alpha1.Gate{}
	for i := range list.Items {
		if list.Items[i].Spec.RunRef.Name == l.run.Name {
			slim(&list.Items[i])
			own = append(own, list.Items[i])
		}
	}
	return own, nil
}

// compare answers with two Runs side by side, live or archived, read as the viewer:
// ?a=NAMESPACE/NAME&b=NAMESPACE/NAME, and aUID, bUID to pick archived ones of a name.
func (s *Server) compare(w http.ResponseWriter, r *http.Request, v *viewer) {
	q := r.URL.Query()
	var sides [2]kubectlergon.CompareSide
	for i, key := range []string{"a", "b"} {
		ns, name, ok := strings.Cut(q.Get(key), "/")
		if !ok || ns == "" || name == "" {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%s: name a Run as NAMESPACE/NAME", key))
			return
		}
		l, err := loadRunAt(r.Context(), v, ns, name, q.Get(key+"UID"))
		if err != nil {
			writeAPIError(w, err)
			return
		}
		gates, _ := l.gates(r.Context(), v) // a viewer who may not list Gates compares without answers
		sides[i] = kubectlergon.CompareSide{Run: l.run, Gates: gates, Archived: l.rec != nil,
			Value: func(step string, val *ergonv1alpha1.OutputValue) ([]byte, error) {
				return l.value(r.Context(), v, step, val, "")
			}}
	}
	writeJSON(w, kubectlergon.Compare(sides[0], sides[1]))
}

// rerun starts a new Run of a Run's snapshot as the viewer, live or archived: from a step
// (the steps upstream of it reused), or all of it, with params changed; or of today's Scene.
// It is the Run kubectl ergon rerun creates: admission and the Run controller authorize it
// against the viewer, and check the reused outputs by digest.
func (s *Server) rerun(w http.ResponseWriter, r *http.Request, v *viewer) {
	var body struct {
		From   string            `json:"from"`
		Params map[string]string `json:"params"`
		Latest bool              `json:"latest"`
		// UID is the Run the page shows; spec.retryOf names a Run by name, which is the
		// newest of that name, so an older one of the same name cannot be rerun.
		UID string `json:"uid"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	old, err := loadRunAt(r.Context(), v, r.PathValue("ns"), r.PathValue("name"), "")
	if err != nil {
		writeAPIError(w, err)
		return
	}
	if body.UID != "" && string(old.run.UID) != body.UID {
		writeError(w, http.StatusConflict, fmt.Errorf("a newer Run named %s exists: a rerun names its Run by name, "+
			"so only the newest of a name can be rerun", old.run.Name))
		return
	}
	run, err := kubectlergon.Rerun(old.run, "", body.Params, body.From, body.Latest)
	if err != nil {
		writeError(w, http.StatusBadRequest, errors.New(strings.ReplaceAll(err.Error(), "--", "")))
		return
	}
	run.Labels = map[string]string{ergonv1alpha1.LabelScene: naming.LabelValue(run.Spec.SceneRef.Name)}
	s.createRun(w, r, v, run)
}
