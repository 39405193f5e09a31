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

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list

// Package archiveapi serves the Run archive as an aggregated Kubernetes API,
// archive.ergon.dev/v1alpha1 archivedruns, behind the API server: every read is authenticated by
// the API server and authorized, with the reader's own identity, as `get runs` in the Run's
// namespace, and only the namespaces so allowed enter the query. Its types are not a CRD.
//
// +kubebuilder:skip
package archiveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
)

// The API's names.
const (
	Group    = "archive.ergon.dev"
	Version  = "v1alpha1"
	Resource = "archivedruns"
	Kind     = "ArchivedRun"
	// Prefix is the path under which the API is served.
	Prefix = "/apis/" + Group + "/"
)

// ArchivedRun is one archived Run: its summary, and on a get its whole record.
type ArchivedRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	// Summary are the columns a list shows and filters by.
	Summary archive.Summary `json:"summary"`
	// Record is the whole record: the Run, its snapshot, outputs, gates and log tails.
	// Only a get returns it.
	Record *archive.Record `json:"record,omitempty"`
}

// ArchivedRunList is a page of archived Runs, newest first.
type ArchivedRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []ArchivedRun `json:"items"`
}

// Server serves the archive's API.
type Server struct {
	Store archive.Store
	// Authenticator tells who is behind a request (the front proxy).
	Authenticator interface {
		Authenticate(*http.Request) (user.Info, error)
	}
	// Client creates SubjectAccessReviews and reads namespaces.
	Client client.Client
	// Reader reads namespaces around the cache.
	Reader client.Reader
	// MaxNamespaceChecks bounds the SubjectAccessReviews one list across namespaces asks,
	// for a reader without cluster-wide access; 1000 when zero.
	MaxNamespaceChecks int
}

// ServeHTTP routes /apis/archive.ergon.dev/...
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the archive is read-only: get and list")
		return
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/apis/"), "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == Group:
		writeJSON(w, http.StatusOK, apiGroup())
		return
	case len(parts) == 2 && parts[0] == Group && parts[1] == Version:
		writeJSON(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: Group + "/" + Version,
			APIResources: []metav1.APIResource{{Name: Resource, SingularName: "archivedrun", Namespaced: true, Kind: Kind,
				Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"arun"}, Categories: []string{"ergon"}}},
		})
		return
	case len(parts) < 3 || parts[0] != Group || parts[1] != Version:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no such path in "+Group)
		return
	}
	who, err := s.Authenticator.Authenticate(r)
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, err.Error())
		return
	}
	rest := parts[2:]
	switch {
	case len(rest) == 1 && rest[0] == Resource:
		s.list(w, r, who, "")
	case len(rest) == 3 && rest[0] == "namespaces" && rest[2] == Resource:
		s.list(w, r, who, rest[1])
	case len(rest) == 4 && rest[0] == "namespaces" && rest[2] == Resource:
		s.get(w, r, who, rest[1], rest[3])
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no such path in "+Group)
	}
}

func apiGroup() *metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
	return &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: Group,
		Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// get returns the newest archived Run of a name, or the one ?uid= names.
func (s *Server) get(w http.ResponseWriter, r *http.Request, who user.Info, namespace, name string) {
	nsUID, ok := s.allowedIn(w, r.Context(), who, namespace)
	if !ok {
		return
	}
	var rec *archive.Record
	var err error
	if uid := r.URL.Query().Get("uid"); uid != "" {
		rec, err = s.Store.Get(r.Context(), []string{nsUID}, uid)
		if err == nil && rec.Run.Name != name {
			err = archive.ErrNotFound
		}
	} else {
		rec, err = s.Store.Find(r.Context(), nsUID, name)
	}
	if errors.Is(err, archive.ErrNotFound) {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("%s.%s %q not found in namespace %s", Resource, Group, name, namespace))
		return
	}
	if err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "reading the archive: "+err.Error())
		return
	}
	item := itemOf(summaryOf(rec, namespace))
	item.Record = rec
	writeJSON(w, http.StatusOK, &item)
}

// list returns a page of the archived Runs of one namespace, or of every namespace the
// reader may get Runs in.
func (s *Server) list(w http.ResponseWriter, r *http.Request, who user.Info, namespace string) {
	q, err := queryOf(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	if namespace != "" {
		nsUID, ok := s.allowedIn(w, r.Context(), who, namespace)
		if !ok {
			return
		}
		q.Namespaces = []string{nsUID}
	} else {
		q.Namespaces, err = s.allowedNamespaces(r.Context(), who)
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
			return
		}
	}
	page, err := s.Store.List(r.Context(), q)
	if err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "reading the archive: "+err.Error())
		return
	}
	list := &ArchivedRunList{TypeMeta: metav1.TypeMeta{Kind: Kind + "List", APIVersion: Group + "/" + Version},
		ListMeta: metav1.ListMeta{Continue: page.Continue}, Items: make([]ArchivedRun, 0, len(page.Items))}
	for _, it := range page.Items {
		list.Items = append(list.Items, itemOf(it))
	}
	writeJSON(w, http.StatusOK, list)
}

// queryOf reads a list's filters: labelSelector (k=v,...), limit, continue, and scene, phase,
// startedBy, trigger, since, until (RFC 3339, or a duration back from now) and text.
func queryOf(r *http.Request) (archive.Query, error) {
	v := r.URL.Query()
	q := archive.Query{Scene: v.Get("scene"), Phase: v.Get("phase"), StartedBy: v.Get("startedBy"),
		Trigger: v.Get("trigger"), Text: v.Get("text"), After: v.Get("continue")}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return q, fmt.Errorf("limit: want a count, not %q", l)
		}
		q.Limit = min(n, archive.MaxLimit)
	}
	if sel := v.Get("labelSelector"); sel != "" {
		set, err := labels.ConvertSelectorToLabelsMap(sel)
		if err != nil {
			return q, fmt.Errorf("labelSelector: only key=value pairs are supported: %w", err)
		}
		q.Labels = set
	}
	var err error
	if q.Since, err = ParseTime("since", v.Get("since")); err != nil {
		return q, err
	}
	if q.Until, err = ParseTime("until", v.Get("until")); err != nil {
		return q, err
	}
	if q.Phase != "" && !ergonv1alpha1.RunPhase(q.Phase).Finished() {
		return q, fmt.Errorf("phase: archived Runs have ended: Succeeded, Failed or Cancelled, not %q", q.Phase)
	}
	return q, nil
}

// ParseTime reads the time a filter named name gives: RFC 3339, or a duration back from now
// (24h); zero when empty. The console reads its filters with it too.
func ParseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("%s: want an RFC 3339 time or a duration back from now (24h), not %q", name, s)
	}
	return t, nil
}

// allowedIn asks whether who may get Runs in namespace, and returns its UID; it writes the
// refusal and returns false when not.
func (s *Server) allowedIn(w http.ResponseWriter, ctx context.Context, who user.Info, namespace string) (string, bool) {
	allowed, err := s.mayGetRuns(ctx, who, namespace)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return "", false
	}
	if !allowed {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"%s.%s is forbidden: User %q cannot get runs.ergon.dev in the namespace %q; archived Runs are read with the right to get Runs",
			Resource, Group, who.GetName(), namespace))
		return "", false
	}
	ns := &corev1.Namespace{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		// A namespace that is gone has no archived Runs anyone may read.
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("namespace %q: %v", namespace, err))
		return "", false
	}
	return string(ns.UID), true
}

// allowedNamespaces returns the UIDs of the namespaces who may get Runs in: every namespace
// for a reader allowed cluster-wide, else each asked by its own SubjectAccessReview.
func (s *Server) allowedNamespaces(ctx context.Context, who user.Info) ([]string, error) {
	all := &corev1.NamespaceList{}
	if err := s.Reader.List(ctx, all); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	clusterWide, err := s.mayGetRuns(ctx, who, "")
	if err != nil {
		return nil, err
	}
	limit := s.MaxNamespaceChecks
	if limit == 0 {
		limit = 1000
	}
	if !clusterWide && len(all.Items) > limit {
		return nil, fmt.Errorf("listing archived Runs across %d namespaces would ask as many access reviews (the limit is %d): "+
			"list one namespace (-n)", len(all.Items), limit)
	}
	var uids []string
	for i := range all.Items {
		ns := &all.Items[i]
		ok := clusterWide
		if !ok {
			if ok, err = s.mayGetRuns(ctx, who, ns.Name); err != nil {
				return nil, err
			}
		}
		if ok {
			uids = append(uids, string(ns.UID))
		}
	}
	return uids, nil
}

// mayGetRuns asks the API server whether who may get Runs in namespace ("" for every one).
func (s *Server) mayGetRuns(ctx context.Context, who user.Info, namespace string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range who.GetExtra() {
		extra[k] = v
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: who.GetName(), UID: who.GetUID(), Groups: who.GetGroups(), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get",
			Group: ergonv1alpha1.GroupVersion.Group, Resource: "runs"},
	}}
	if err := s.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking whether %s may get Runs in %q: %w", who.GetName(), namespace, err)
	}
	return sar.Status.Allowed, nil
}

func summaryOf(rec *archive.Record, namespace string) archive.Summary {
	run := &rec.Run
	sum := archive.Summary{UID: string(run.UID), Namespace: namespace, NamespaceUID: rec.NamespaceUID, Name: run.Name,
		Scene: run.Spec.SceneRef.Name, Phase: string(run.Status.Phase), Labels: run.Labels,
		CreatedAt: run.CreationTimestamp.Time, ArchivedAt: rec.ArchivedAt}
	if run.Status.FinishedAt != nil {
		sum.FinishedAt = run.Status.FinishedAt.Time
	}
	return sum
}

func itemOf(s archive.Summary) ArchivedRun {
	return ArchivedRun{TypeMeta: metav1.TypeMeta{Kind: Kind, APIVersion: Group + "/" + Version},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: types.UID(s.UID), Labels: s.Labels,
			CreationTimestamp: metav1.NewTime(s.CreatedAt)},
		Summary: s}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}
