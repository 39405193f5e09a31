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
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// Names of the A2A endpoint.
const (
	// A2APath is the prefix of the agents' endpoints: A2APath/NAMESPACE/SCENE serves JSON-RPC,
	// and its AgentCardPath the agent card.
	A2APath       = "/a2a"
	AgentCardPath = "/.well-known/agent-card.json"
	// ProtocolA2A is the value of ergonv1alpha1.AnnotationVia on the Runs A2A messages start.
	ProtocolA2A = "a2a"
	// a2aVersion is the A2A protocol version the endpoint speaks.
	a2aVersion = "0.3.0"
	// annotationContext keeps the A2A contextId a Run's task belongs to.
	annotationContext = "protocols.ergon.dev/a2a-context"
	// maxContextID bounds a contextId a client chooses.
	maxContextID = 256
)

// serveAgent serves one Scene as an A2A agent to the request's caller: its card on GET of the
// card path, else JSON-RPC. A Scene that is not offered, or that the caller may not run, is
// not found.
func (s *Server) serveAgent(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("scene")
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		http.NotFound(w, r)
		return
	}
	c := callerOf(r.Context())
	sc, err := s.exposedScene(r.Context(), c, ergonv1alpha1.LabelA2AAgent, ns, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	ag := &agent{s: s, c: c, scene: sc}
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, AgentCardPath) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ag.card(agentURL(r, ns, name)))
		return
	}
	a2asrv.NewJSONRPCHandler(ag).ServeHTTP(w, r)
}

// agentURL is the endpoint's address as the caller reached it.
func agentURL(r *http.Request, ns, name string) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		host = fh
	}
	return fmt.Sprintf("%s://%s%s/%s/%s", scheme, host, A2APath, ns, name)
}

// agent is one Scene as an A2A agent, for one caller: each task is a Run of the Scene, its id
// the Run's name.
type agent struct {
	s     *Server
	c     *caller
	scene *ergonv1alpha1.Scene
}

var _ a2asrv.RequestHandler = (*agent)(nil)

// card is the agent card: one skill, the Scene; bearer tokens of the cluster.
func (a *agent) card(url string) *a2a.AgentCard {
	desc := strings.TrimSpace(a.scene.Spec.Description)
	if desc == "" {
		desc = fmt.Sprintf("Runs the Ergon Scene %s/%s.", a.scene.Namespace, a.scene.Name)
	}
	params := "It takes no params."
	if names := paramNames(a.scene); names != "none" {
		params = "Send its params (" + names + ") as a data part; a Scene with one param also takes it as text."
	}
	const scheme a2a.SecuritySchemeName = "kubernetes"
	return &a2a.AgentCard{
		Name: a.scene.Name, Description: desc, URL: url, Version: fmt.Sprint(a.scene.Generation),
		ProtocolVersion: a2aVersion, PreferredTransport: a2a.TransportProtocolJSONRPC,
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"application/json", "text/plain"}, DefaultOutputModes: []string{"application/json"},
		Skills: []a2a.AgentSkill{{ID: a.scene.Name, Name: a.scene.Name, Description: desc + " " + params,
			Tags: []string{"ergon", "workflow"}}},
		SecuritySchemes: a2a.NamedSecuritySchemes{scheme: a2a.HTTPAuthSecurityScheme{Scheme: "bearer",
			Description: "a Kubernetes bearer token of the cluster, as kubectl create token gives one"}},
		Security: []a2a.SecurityRequirements{{scheme: a2a.SecuritySchemeScopes{}}},
	}
}

// OnSendMessage starts a task (a Run) from a message, or answers the Gate a task waits on with
// one that names the task; then, unless the client asked not to block, waits until the task
// ends or needs input, at most CallWait.
func (a *agent) OnSendMessage(ctx context.Context, params *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	key, err := a.receive(ctx, params)
	if err != nil {
		return nil, err
	}
	if params.Config != nil && params.Config.Blocking != nil && !*params.Config.Blocking {
		return a.taskOf(ctx, key)
	}
	done, err := a.s.enter(a.c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrServerError, err)
	}
	defer done()
	v, err := a.s.follow(ctx, a.c, key, nil, func(v *runView) bool { return len(v.Decidable) > 0 })
	if err != nil {
		return nil, a.failure(err)
	}
	return a.task(ctx, v), nil
}

// OnSendMessageStream does what OnSendMessage does, and streams the task's changes until it
// ends or needs input.
func (a *agent) OnSendMessageStream(ctx context.Context, params *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	key, err := a.receive(ctx, params)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return a.stream(ctx, key)
}

// OnResubscribeToTask streams a task's changes again.
func (a *agent) OnResubscribeToTask(ctx context.Context, id *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return a.stream(ctx, a.keyOf(id.ID))
}

// OnGetTask reads a task.
func (a *agent) OnGetTask(ctx context.Context, query *a2a.TaskQueryParams) (*a2a.Task, error) {
	return a.taskOf(ctx, a.keyOf(query.ID))
}

// OnCancelTask cancels a task's Run, as the caller.
func (a *agent) OnCancelTask(ctx context.Context, id *a2a.TaskIDParams) (*a2a.Task, error) {
	key := a.keyOf(id.ID)
	task, err := a.taskOf(ctx, key)
	if err != nil {
		return nil, err
	}
	if task.Status.State.Terminal() {
		return nil, fmt.Errorf("%w: the task ended %s", a2a.ErrTaskNotCancelable, task.Status.State)
	}
	if err := a.s.cancel(ctx, a.c, key); err != nil {
		return nil, a.failure(err)
	}
	return a.taskOf(ctx, key)
}

// The push-notification methods: Ergon sends no push notifications to callers.

func (a *agent) OnGetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (a *agent) OnListTaskPushConfig(context.Context, *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (a *agent) OnSetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (a *agent) OnDeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigParams) error {
	return a2a.ErrPushNotificationNotSupported
}

func (a *agent) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrAuthenticatedExtendedCardNotConfigured
}

// receive acts on a message: one without a task starts a Run of the Scene with the params it
// carries; one with a task answers the Gate the task waits on. It returns the task's Run.
func (a *agent) receive(ctx context.Context, params *a2a.MessageSendParams) (client.ObjectKey, error) {
	msg := params.Message
	if msg == nil {
		return client.ObjectKey{}, fmt.Errorf("%w: the message is missing", a2a.ErrInvalidParams)
	}
	if msg.TaskID != "" {
		key := a.keyOf(msg.TaskID)
		v, err := a.view(ctx, key)
		if err != nil {
			return key, err
		}
		gate, ans, err := answerIn(v, msg)
		if err != nil {
			return key, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
		}
		if err := a.s.decide(ctx, a.c, client.ObjectKey{Namespace: key.Namespace, Name: gate}, ans); err != nil {
			return key, fmt.Errorf("%w: the answer to Gate %s was refused: %v", a2a.ErrInvalidParams, gate, err)
		}
		return key, nil
	}
	args, err := argsIn(a.scene, msg)
	if err != nil {
		return client.ObjectKey{}, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
	}
	run, err := a.s.start(ctx, a.c, a.scene, args, ProtocolA2A, contextAnnotation(msg.ContextID))
	if err != nil {
		return client.ObjectKey{}, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
	}
	return client.ObjectKeyFromObject(run), nil
}

// contextAnnotation keeps a message's contextId on the Run it starts, when it is one a client
// may choose.
func contextAnnotation(id string) map[string]string {
	if id == "" || len(id) > maxContextID || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil
	}
	return map[string]string{annotationContext: id}
}

// argsIn are the params a message gives: the object of its data part ("params" in it, when it
// has that key), else the text of its text parts for a Scene that takes one param.
func argsIn(sc *ergonv1alpha1.Scene, msg *a2a.Message) (map[string]any, error) {
	data, text := partsOf(msg)
	if data != nil {
		if p, ok := data["params"].(map[string]any); ok {
			return p, nil
		}
		return data, nil
	}
	var settable []string
	for _, p := range sc.Spec.SettableParams() {
		settable = append(settable, p.Name)
	}
	switch {
	case len(settable) == 0:
		return nil, nil
	case len(settable) == 1 && text != "":
		return map[string]any{settable[0]: text}, nil
	case text == "" && !slices.ContainsFunc(sc.Spec.SettableParams(), func(p ergonv1alpha1.ParamSpec) bool { return p.Default == nil }):
		return nil, nil
	}
	return nil, fmt.Errorf("send the Scene's params (%s) as a data part, {\"params\": {...}}", strings.Join(settable, ", "))
}

// partsOf is the first data part's object of a message and its text.
func partsOf(msg *a2a.Message) (map[string]any, string) {
	var data map[string]any
	var text []string
	for _, p := range msg.Parts {
		switch p := p.(type) { // the SDK decodes parts as values
		case a2a.DataPart:
			if data == nil {
				data = p.Data
			}
		case a2a.TextPart:
			text = append(text, p.Text)
		}
	}
	return data, strings.TrimSpace(strings.Join(text, "\n"))
}

// answerIn is the Gate a message answers and its answer: the Gate its data part names ("gate"),
// or the only one the caller may decide; a decision from "decision" or the text, a comment
// from "comment"; an input Gate's values from "values", or the rest of the data part.
func answerIn(v *runView, msg *a2a.Message) (string, answer, error) {
	data, text := partsOf(msg)
	if data == nil {
		data = map[string]any{}
	}
	name, _ := data["gate"].(string)
	var gate *ergonv1alpha1.Gate
	for _, g := range v.Decidable {
		if g.Name == name || name == "" && len(v.Decidable) == 1 {
			gate = g
		}
	}
	if gate == nil {
		var open []string
		for _, g := range v.Decidable {
			open = append(open, g.Name)
		}
		if len(open) == 0 {
			return "", answer{}, errors.New("the task waits for no Gate that you may decide")
		}
		return "", answer{}, fmt.Errorf("name the Gate to answer in a data part, {\"gate\": ...}; open: %s", strings.Join(open, ", "))
	}
	if gate.Spec.Input != nil {
		values, ok := data["values"].(map[string]any)
		if !ok {
			values = map[string]any{}
			for k, val := range data {
				if k != "gate" {
					values[k] = val
				}
			}
		}
		a, err := answerOf(gate, values)
		return gate.Name, a, err
	}
	if _, ok := data[fieldDecision]; !ok && text != "" {
		data[fieldDecision] = strings.ToLower(strings.Trim(strings.Fields(text)[0], ".,;:!?"))
	}
	a, err := answerOf(gate, data)
	return gate.Name, a, err
}

// keyOf is the Run of a task of this agent.
func (a *agent) keyOf(id a2a.TaskID) client.ObjectKey {
	return client.ObjectKey{Namespace: a.scene.Namespace, Name: string(id)}
}

// view reads a task's Run, which must be one of this agent's Scene.
func (a *agent) view(ctx context.Context, key client.ObjectKey) (*runView, error) {
	if len(validation.IsDNS1123Subdomain(key.Name)) > 0 {
		return nil, fmt.Errorf("%w: no task %q", a2a.ErrTaskNotFound, key.Name)
	}
	v, err := a.s.view(ctx, a.c, key)
	if err != nil {
		return nil, a.failure(err)
	}
	if v.Run.Labels[ergonv1alpha1.LabelScene] != naming.LabelValue(a.scene.Name) || v.Run.Spec.SceneRef.Name != a.scene.Name {
		return nil, fmt.Errorf("%w: no task %q of this agent", a2a.ErrTaskNotFound, key.Name)
	}
	return v, nil
}

func (a *agent) taskOf(ctx context.Context, key client.ObjectKey) (*a2a.Task, error) {
	v, err := a.view(ctx, key)
	if err != nil {
		return nil, err
	}
	return a.task(ctx, v), nil
}

// failure is an API server's error as an A2A error.
func (a *agent) failure(err error) error {
	switch {
	case errors.Is(err, a2a.ErrTaskNotFound):
		return err
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return fmt.Errorf("%w: %v", a2a.ErrTaskNotFound, err)
	}
	return fmt.Errorf("%w: %v", a2a.ErrInternalError, err)
}

// stream yields a task, then its changes until it ends or needs input (the last event is
// final), or until CallWait has passed.
func (a *agent) stream(ctx context.Context, key client.ObjectKey) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		v, err := a.view(ctx, key)
		if err != nil {
			yield(nil, err)
			return
		}
		task := a.task(ctx, v)
		if !yield(task, nil) || task.Status.State.Terminal() || task.Status.State == a2a.TaskStateInputRequired {
			return
		}
		done, err := a.s.enter(a.c)
		if err != nil {
			yield(nil, fmt.Errorf("%w: %v", a2a.ErrServerError, err))
			return
		}
		defer done()
		last := task.Status.State
		stopped := false
		v, err = a.s.follow(ctx, a.c, key, func(v *runView) {
			st := a.status(v)
			if stopped || st.State == last && st.State != a2a.TaskStateWorking {
				return
			}
			last = st.State
			if st.State.Terminal() || st.State == a2a.TaskStateInputRequired {
				return // told as the final event below
			}
			stopped = !yield(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: st}, nil)
		}, func(v *runView) bool { return stopped || len(v.Decidable) > 0 })
		if stopped {
			return
		}
		if err != nil {
			yield(nil, a.failure(err))
			return
		}
		end := a.task(ctx, v)
		for _, art := range end.Artifacts {
			if !yield(&a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: art, LastChunk: true}, nil) {
				return
			}
		}
		final := end.Status.State.Terminal() || end.Status.State == a2a.TaskStateInputRequired
		yield(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: end.Status, Final: final}, nil)
	}
}

// task is a Run as an A2A task: its status and, once it succeeded, its outputs as an artifact.
func (a *agent) task(ctx context.Context, v *runView) *a2a.Task {
	run := v.Run
	t := &a2a.Task{ID: a2a.TaskID(run.Name), ContextID: run.Annotations[annotationContext], Status: a.status(v),
		Metadata: map[string]any{"namespace": run.Namespace, "run": run.Name}}
	if t.ContextID == "" {
		t.ContextID = run.Name
	}
	if run.Status.Phase == ergonv1alpha1.RunSucceeded {
		res := a.s.resultOf(ctx, a.c, v)
		data := map[string]any{"outputs": res.Outputs}
		if len(res.Notes) > 0 {
			data["notes"] = res.Notes
		}
		t.Artifacts = []*a2a.Artifact{{ID: a2a.ArtifactID(run.Name + "-outputs"), Name: "outputs",
			Description: "the outputs of the Run's final steps, by step", Parts: a2a.ContentParts{a2a.DataPart{Data: data}}}}
	}
	return t
}

// status maps a Run onto the task lifecycle: submitted until it starts, working while it runs,
// input-required while it waits on a Gate the caller may decide (the status message holds
// the Gate's form), then completed, failed or canceled.
func (a *agent) status(v *runView) a2a.TaskStatus {
	run := v.Run
	say := func(parts ...a2a.Part) *a2a.Message {
		m := a2a.NewMessage(a2a.MessageRoleAgent, parts...)
		m.TaskID, m.ContextID = a2a.TaskID(run.Name), run.Annotations[annotationContext]
		return m
	}
	st := a2a.TaskStatus{State: a2a.TaskStateWorking}
	// The time of the Run's last change of outcome, else of its start.
	if t := run.Status.StartedAt; t != nil {
		st.Timestamp = &t.Time
	}
	if c := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded); c != nil && !c.LastTransitionTime.IsZero() {
		st.Timestamp = &c.LastTransitionTime.Time
	}
	msg := runMessage(run)
	switch run.Status.Phase {
	case ergonv1alpha1.RunSucceeded:
		st.State = a2a.TaskStateCompleted
	case ergonv1alpha1.RunFailed:
		st.State = a2a.TaskStateFailed
	case ergonv1alpha1.RunCancelled:
		st.State = a2a.TaskStateCanceled
	case "", ergonv1alpha1.RunPending:
		st.State = a2a.TaskStateSubmitted
	}
	if !st.State.Terminal() && len(v.Decidable) > 0 {
		g := v.Decidable[0]
		st.State = a2a.TaskStateInputRequired
		data := map[string]any{"gate": g.Name, "step": g.Spec.Step}
		if form, ok := gateForm(g); ok {
			data["schema"] = form
		}
		st.Message = say(a2a.TextPart{Text: formMessage(g) + "\nAnswer with a message on this task: a data part with " +
			"\"gate\" and the schema's fields."}, a2a.DataPart{Data: data})
		return st
	}
	if waits := v.Waiting(); len(waits) > 0 && !st.State.Terminal() {
		msg = "waits for " + strings.Join(waits, "; ")
	}
	if msg != "" {
		st.Message = say(a2a.TextPart{Text: msg})
	}
	return st
}
