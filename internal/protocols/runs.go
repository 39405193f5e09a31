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

package protocols

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/kubectlergon"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// Bounds of what one listing costs.
const (
	// maxNamespaces is the most namespaces one listing looks in, one by one.
	maxNamespaces = 200
	// maxScenes is the most Scenes one listing offers.
	maxScenes = 500
)

// exposedScenes lists the Scenes labelled label=true that the caller may run: in namespace
// only when it is set, else in every namespace where RBAC lets them create Runs, as far as
// they may list Scenes there. A caller who may list Scenes everywhere is answered from one
// list; any other from the namespaces they may list, or Config.Namespaces when they may not.
func (s *Server) exposedScenes(ctx context.Context, c *caller, label, namespace string) ([]ergonv1alpha1.Scene, error) {
	// By person and groups: RBAC answers by both, and two tokens of one person may differ in groups.
	key := strings.Join([]string{c.user.Username, strings.Join(c.user.Groups, ","), label, namespace}, "\x00")
	if scenes, ok := s.listings.get(key); ok {
		return scenes, nil
	}
	scenes, err := s.listScenes(ctx, c, label, namespace)
	if err == nil {
		s.listings.put(key, scenes)
	}
	return scenes, err
}

// listScenes is exposedScenes, asked of the API server.
func (s *Server) listScenes(ctx context.Context, c *caller, label, namespace string) ([]ergonv1alpha1.Scene, error) {
	selector := client.MatchingLabels{label: "true"}
	var scenes []ergonv1alpha1.Scene
	everywhere := false
	if namespace == "" {
		var err error
		if everywhere, err = s.may(ctx, c, "list", "scenes", ""); err != nil {
			return nil, err
		}
	}
	if everywhere {
		all := &ergonv1alpha1.SceneList{}
		if err := c.c.List(ctx, all, selector, client.Limit(maxScenes)); err != nil {
			return nil, err
		}
		scenes = all.Items
	} else {
		namespaces := []string{namespace}
		if namespace == "" {
			namespaces = s.namespacesOf(ctx, c)
		}
		for _, ns := range namespaces {
			list := &ergonv1alpha1.SceneList{}
			if err := c.c.List(ctx, list, client.InNamespace(ns), selector, client.Limit(maxScenes)); err != nil {
				continue // a namespace whose Scenes the caller may not list offers none
			}
			scenes = append(scenes, list.Items...)
			if len(scenes) >= maxScenes {
				break
			}
		}
	}
	creates := map[string]bool{}
	for _, sc := range scenes {
		creates[sc.Namespace] = false
	}
	for _, ns := range slices.Sorted(maps.Keys(creates)) {
		ok, err := s.may(ctx, c, "create", "runs", ns)
		if err != nil {
			return nil, err
		}
		creates[ns] = ok
	}
	scenes = slices.DeleteFunc(scenes, func(sc ergonv1alpha1.Scene) bool { return !creates[sc.Namespace] })
	slices.SortFunc(scenes, func(a, b ergonv1alpha1.Scene) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return scenes[:min(len(scenes), maxScenes)], nil
}

// namespacesOf are the namespaces a listing looks in: those the caller may list, else the
// configured ones.
func (s *Server) namespacesOf(ctx context.Context, c *caller) []string {
	list := &corev1.NamespaceList{}
	if err := c.c.List(ctx, list, client.Limit(maxNamespaces)); err != nil {
		return slices.Clone(s.cfg.Namespaces)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names
}

// exposedScene is one Scene the caller may run through label, or an error that does not say
// whether a Scene the caller may not see exists.
func (s *Server) exposedScene(ctx context.Context, c *caller, label, namespace, name string) (*ergonv1alpha1.Scene, error) {
	missing := fmt.Errorf("no Scene %s/%s that you may run is offered here", namespace, name)
	sc := &ergonv1alpha1.Scene{}
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sc); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil, missing
		}
		return nil, err
	}
	if sc.Labels[label] != "true" {
		return nil, missing
	}
	ok, err := s.may(ctx, c, "create", "runs", namespace)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s may not create Runs in namespace %s", c.user.Username, namespace)
	}
	return sc, nil
}

// may asks the API server whether the caller may do verb on an Ergon resource.
func (s *Server) may(ctx context.Context, c *caller, verb, resource, namespace string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: verb, Group: ergonv1alpha1.GroupVersion.Group, Resource: resource,
		},
	}}
	if err := c.c.Create(ctx, review); err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// start creates a Run of a Scene as the caller, with the arguments as its params, marked as
// started through protocol (ergonv1alpha1.AnnotationVia) and with the annotations given. An argument that is no param of the
// Scene, or not a string, number or boolean, is refused by name; the rest (a missing param,
// a Scene that does not compile) is admission's to refuse, and its message is returned.
func (s *Server) start(ctx context.Context, c *caller, sc *ergonv1alpha1.Scene, args map[string]any, protocol string,
	annotations map[string]string) (*ergonv1alpha1.Run, error) {
	settable := map[string]bool{}
	for _, p := range sc.Spec.SettableParams() {
		settable[p.Name] = true
	}
	var params map[string]string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if !settable[k] {
			return nil, fmt.Errorf("params.%s: the Scene %s takes no such param; it takes %s", k, sc.Name, paramNames(sc))
		}
		var v string
		switch a := args[k].(type) {
		case string:
			v = a
		case bool:
			v = strconv.FormatBool(a)
		case float64:
			v = strconv.FormatFloat(a, 'f', -1, 64)
		case json.Number:
			v = a.String()
		default:
			return nil, fmt.Errorf("params.%s: want a string, not %T", k, a)
		}
		if params == nil {
			params = map[string]string{}
		}
		params[k] = v
	}
	annotations = maps.Clone(annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ergonv1alpha1.AnnotationVia] = protocol
	run := &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{GenerateName: naming.Join(50, sc.Name) + "-", Namespace: sc.Namespace,
			Labels:      map[string]string{ergonv1alpha1.LabelScene: naming.LabelValue(sc.Name)},
			Annotations: annotations},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: sc.Name}, Params: params},
	}
	if err := c.c.Create(ctx, run); err != nil {
		return nil, err
	}
	return run, nil
}

func paramNames(sc *ergonv1alpha1.Scene) string {
	var names []string
	for _, p := range sc.Spec.SettableParams() {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// runView is what a waiting call sees of its Run at one read.
type runView struct {
	Run *ergonv1alpha1.Run
	// Decidable are the Run's open Gates the caller may decide, oldest first.
	Decidable []*ergonv1alpha1.Gate
	// Others are the Run's open Gates the caller may not decide.
	Others []*ergonv1alpha1.Gate
}

// Waiting says what the Run waits for, for a person to read.
func (v *runView) Waiting() []string {
	var waits []string
	for _, g := range v.Decidable {
		waits = append(waits, fmt.Sprintf("Gate %s (step %s), which you may decide: %s", g.Name, g.Spec.Step, g.Spec.Message))
	}
	for _, g := range v.Others {
		waits = append(waits, fmt.Sprintf("Gate %s (step %s), which others decide: %s", g.Name, g.Spec.Step, g.Spec.Message))
	}
	return waits
}

// maxChildDepth bounds how deep view looks for the Gates of child Runs.
const maxChildDepth = 4

// view reads a Run and, while it runs, the open Gates of it and of its child Runs (a scene
// step's), as the caller: a step waits on a gate step's Gate, an agent's question or tool
// approval, or a child Run's Gate.
func (s *Server) view(ctx context.Context, c *caller, key client.ObjectKey) (*runView, error) {
	run := &ergonv1alpha1.Run{}
	if err := c.c.Get(ctx, key, run); err != nil {
		return nil, err
	}
	v := &runView{Run: run}
	if run.Status.Phase.Finished() {
		return v, nil
	}
	open, err := s.openGates(ctx, c, run, maxChildDepth)
	if apierrors.IsForbidden(err) {
		return v, nil // the caller sees the Run run, not what it waits on
	}
	if err != nil {
		return nil, err
	}
	decidable, _, err := kubectlergon.PendingAmongFor(ctx, c.c, c.user.Username, c.user.Groups, slices.Clone(open), 0)
	if err != nil {
		return nil, err
	}
	v.Decidable = decidable
	for i := range open {
		if !slices.ContainsFunc(decidable, func(g *ergonv1alpha1.Gate) bool { return g.Name == open[i].Name }) {
			v.Others = append(v.Others, &open[i])
		}
	}
	return v, nil
}

// openGates lists the open Gates a Run controls and, depth levels down, those of the child
// Runs it controls.
func (s *Server) openGates(ctx context.Context, c *caller, run *ergonv1alpha1.Run, depth int) ([]ergonv1alpha1.Gate, error) {
	gates := &ergonv1alpha1.GateList{}
	if err := c.c.List(ctx, gates, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}); err != nil {
		return nil, err
	}
	open := slices.DeleteFunc(gates.Items, func(g ergonv1alpha1.Gate) bool {
		return !controlledBy(&g, run) || g.Spec.Decision != nil || !g.Status.Phase.Open()
	})
	if depth == 0 {
		return open, nil
	}
	children := &ergonv1alpha1.RunList{}
	if err := c.c.List(ctx, children, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelParentRun: naming.LabelValue(run.Name)}); err != nil {
		return nil, err
	}
	for i := range children.Items {
		child := &children.Items[i]
		if !controlledBy(child, run) || child.Status.Phase.Finished() {
			continue
		}
		more, err := s.openGates(ctx, c, child, depth-1)
		if err != nil {
			return nil, err
		}
		open = append(open, more...)
	}
	return open, nil
}

// controlledBy says whether run controls obj, as the Run controller made it.
func controlledBy(obj metav1.Object, run *ergonv1alpha1.Run) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == run.UID
}

// follow reads the Run every Poll until it ends, until until says to stop, or until the call
// has waited CallWait; it returns the last view. changed is told of every view whose Run or
// Gates differ from the one before.
func (s *Server) follow(ctx context.Context, c *caller, key client.ObjectKey, changed func(*runView),
	until func(*runView) bool) (*runView, error) {
	// The wait's end is not the reads' deadline: a read near it would fail (client-go's rate
	// limiter refuses to wait past a deadline) instead of answering with what was seen.
	waited := time.NewTimer(s.cfg.CallWait)
	defer waited.Stop()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	var last *runView
	lastSeen := ""
	for {
		v, err := s.view(ctx, c, key)
		switch {
		case err != nil && last != nil && ctx.Err() != nil:
			return last, nil // the caller went away during a read
		case err != nil:
			return nil, err
		}
		last = v
		if seen := fingerprint(v); seen != lastSeen {
			lastSeen = seen
			if changed != nil {
				changed(v)
			}
		}
		if v.Run.Status.Phase.Finished() || until(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return last, nil
		case <-waited.C:
			return last, nil
		case <-tick.C:
		}
	}
}

// fingerprint tells views apart by what a caller is told of them.
func fingerprint(v *runView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s", v.Run.Status.Phase, v.Run.Status.Progress, runMessage(v.Run))
	for _, g := range append(slices.Clone(v.Decidable), v.Others...) {
		b.WriteString("|" + g.Name)
	}
	return b.String()
}

// runMessage is the message of the Run's Succeeded condition.
func runMessage(run *ergonv1alpha1.Run) string {
	if c := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded); c != nil {
		return c.Message
	}
	return ""
}

// progressOf counts a Run's finished steps of all, from status.progress ("3/7").
func progressOf(run *ergonv1alpha1.Run) (done, total float64) {
	d, t, ok := strings.Cut(run.Status.Progress, "/")
	if !ok {
		return 0, 0
	}
	done, _ = strconv.ParseFloat(d, 64)
	total, _ = strconv.ParseFloat(t, 64)
	return done, total
}

// result is what a caller gets of a Run: its phase and, once it succeeded, its outputs.
type result struct {
	Namespace string         `json:"namespace"`
	Run       string         `json:"run"`
	Phase     string         `json:"phase"`
	Message   string         `json:"message,omitempty"`
	Outputs   map[string]any `json:"outputs,omitempty"`
	// Waiting lists what the Run waits for; Notes what the answer leaves out and why.
	Waiting []string `json:"waiting,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// resultOf reads what a caller gets of a Run. Outputs are read as the caller, each whole and
// checked against its digest, parsed when they are JSON; beyond MaxResultBytes, or when the
// caller may not read the ConfigMap that keeps one, an output is given as its preview and a
// note says so.
func (s *Server) resultOf(ctx context.Context, c *caller, v *runView) result {
	run := v.Run
	res := result{Namespace: run.Namespace, Run: run.Name, Phase: string(run.Status.Phase), Message: runMessage(run)}
	if res.Phase == "" {
		res.Phase = "Pending"
	}
	if !run.Status.Phase.Finished() {
		res.Waiting = v.Waiting()
	}
	if run.Status.Phase != ergonv1alpha1.RunSucceeded {
		return res
	}
	budget := s.cfg.MaxResultBytes
	res.Outputs = map[string]any{}
	for _, step := range slices.Sorted(maps.Keys(run.Status.Outputs)) {
		out := run.Status.Outputs[step]
		b, err := outputs.Read(ctx, c.c, run.Namespace, &out)
		switch {
		case err != nil:
			res.Notes = append(res.Notes, fmt.Sprintf("the output of step %s is its preview only: %v", step, err))
			b = []byte(out.Preview)
		case len(b) > budget:
			res.Notes = append(res.Notes, fmt.Sprintf("the output of step %s is its preview only: its %d bytes are more than "+
				"this answer has room for; read it with kubectl ergon output", step, len(b)))
			b = []byte(out.Preview)
		}
		budget -= len(b)
		var parsed any
		if json.Unmarshal(b, &parsed) == nil {
			res.Outputs[step] = parsed
		} else {
			res.Outputs[step] = string(b)
		}
	}
	return res
}

// answer is a person's answer to a Gate.
type answer struct {
	Option, Comment string
	Values          *apiextensionsv1.JSON
}

// decide answers a Gate as the caller, with the patch kubectl ergon approve makes: the Gate
// webhook stamps who decided and refuses whoever may not.
func (s *Server) decide(ctx context.Context, c *caller, key client.ObjectKey, a answer) error {
	_, err := kubectlergon.DecideGate(ctx, c.c, key, a.Option, a.Comment, a.Values)
	return err
}

// cancel asks a Run to stop, as the caller.
func (s *Server) cancel(ctx context.Context, c *caller, key client.ObjectKey) error {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return c.c.Patch(ctx, run, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cancel":true}}`)))
}

// listingTTL is how long a caller's listing is answered from memory: a client that lists its
// tools on every turn costs the API server one listing in that time, not one per request.
const listingTTL = 10 * time.Second

// listings remembers recent listings, by caller and scope.
type listings struct {
	mu      sync.Mutex
	entries map[string]listing
}

type listing struct {
	scenes []ergonv1alpha1.Scene
	at     time.Time
}

func (l *listings) get(key string) ([]ergonv1alpha1.Scene, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	if !ok || time.Since(e.at) > listingTTL {
		return nil, false
	}
	return e.scenes, true
}

func (l *listings) put(key string, scenes []ergonv1alpha1.Scene) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil || len(l.entries) >= maxCallers {
		l.entries = map[string]listing{} // forgetting all only costs each caller one listing
	}
	l.entries[key] = listing{scenes: scenes, at: time.Now()}
}
