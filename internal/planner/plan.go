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

package planner

import (
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// Plan is what the Run controller does next: create these children, delete those, write
// this status, and come back after RequeueAfter if nothing else wakes it first.
type Plan struct {
	// Status is the Run's next status.
	Status ergonv1alpha1.RunStatus
	// Pods to create, one per started attempt.
	Pods []PodRequest
	// Children are child Runs to create.
	Children []ChildRequest
	// Gates to create.
	Gates []GateRequest
	// DeletePods are running pods to stop (cancellation, Run timeout); CleanupPods are pods
	// whose work the stored status records as done (see EndedPods).
	DeletePods  []string
	CleanupPods []string
	// CancelChildren are child Runs to cancel.
	CancelChildren []string
	// RequeueAfter is when time alone changes the plan (a retry is due, the Run times out).
	// Zero means only a change in the cluster does.
	RequeueAfter time.Duration
	// Events are the transitions worth telling people about.
	Events []Event
	// Store are outputs to keep in ConfigMaps before the status names them: of steps too
	// large for the status, and of fan-out instances and loop iterations (and the steps
	// they end).
	Store []StoreRequest
	// TakeLeases ask for the Workspace's write lease for attempts that wait for it;
	// ReleaseLease gives back the lease an attempt of this Run no longer needs.
	TakeLeases   []LeaseRequest
	ReleaseLease string
	// LeaseWrite is the lease's next state, when TakeLeases and ReleaseLease change it.
	LeaseWrite *LeaseWrite
	// ToolResults are the results of agent steps' tool calls to store for their next
	// attempts, before their pods are created (toolcalls.go).
	ToolResults []ToolResultsRequest
	// ToolPods are the one-shot pods of container tool calls to create (toolpods.go).
	ToolPods []ToolPodRequest
	// MemoryWrite keeps the memory writes of the agent steps the plan records as succeeded;
	// MemoryPin is the digest of the memory the plan's agent pods may read (DecideMemory).
	MemoryWrite *MemoryWrite
	MemoryPin   string
	// KeepCheckpoints are the agent steps' checkpoints to keep before the pods that resume
	// from them are created, NoteCheckpoints the digests the steps' status records from now
	// on, Answers the answers to hand to waiting agent pods, and AgentsSeen what was read of
	// each agent pod's log, by pod UID (agents.go).
	KeepCheckpoints []CheckpointWrite
	NoteCheckpoints map[string]string
	Answers         []AnswerRequest
	AgentsSeen      map[string]AgentSeen
	// WaitingForSlots are the steps and units that could have started in this pass but for
	// the manager's step pod slots (Facts.PodBudget).
	WaitingForSlots int
	// RetryPods are the pods a full ResourceQuota refused that are created again now
	// (Facts.QuotaWaiting), authorized again as any pod: those the plan neither creates
	// anew nor stops. They do not count in OnlyObserves: a pass held back retries nothing.
	RetryPods []string
}

// OnlyObserves reports whether the plan does nothing but record what the Run's pods did
// since stored: it creates, stores, stops and hands over nothing, and the Run's phase and
// observed generation stay as they are. Deleting pods whose outcome stored already records
// (CleanupPods) may wait, so it does not count. Such a plan may be written a moment later,
// together with the next, without slowing the Run down: the Run controller coalesces them.
func (p *Plan) OnlyObserves(stored *ergonv1alpha1.RunStatus) bool {
	acts := len(p.Pods) + len(p.Children) + len(p.Gates) + len(p.DeletePods) + len(p.CancelChildren) +
		len(p.Store) + len(p.TakeLeases) + len(p.ToolResults) + len(p.ToolPods)
	return acts == 0 && p.ReleaseLease == "" && p.Status.Phase == stored.Phase &&
		p.Status.ObservedGeneration == stored.ObservedGeneration
}

// PodRequest asks for the pod of one attempt of a container or agent step.
type PodRequest struct {
	Name string
	// StandsFor is the predictable name of a pod created under an alternate (names.go).
	StandsFor string
	Step      *compile.Step
	Attempt   int32
	Rendered  *compile.Rendered
	// Inputs are the outputs of the step's direct dependencies, which the pod sees as files.
	Inputs []Input
	// Unit is the fan-out instance or loop iteration the pod runs, nil for a plain step.
	Unit *Unit
}

// Input is the output of a dependency, handed to a step pod as a file: from the ConfigMap
// that keeps it, or inline when it is small.
type Input struct {
	Step  string
	Ref   *ergonv1alpha1.OutputRef
	Value string
}

// ChildRequest asks for a child Run.
type ChildRequest struct {
	Name      string
	StandsFor string
	Step      string
	Scene     string
	Params    map[string]string
}

// GateRequest asks for the Gate of a gate step.
type GateRequest struct {
	Name      string
	StandsFor string
	Step      *compile.Step
	Message   string
	// ToolCall is the id of the agent's tool call the Gate asks approval of, and Tool the
	// agent's tool it calls (whose approval says who approves); empty for a gate step's Gate.
	ToolCall string
	Tool     *ergonv1alpha1.AgentTool
	// Input is the schema of the answer an agent's question (ask_human) asks for.
	Input *apiextensionsv1.JSON
	// Chat is the conversation of a chat step whose reply the Gate asks the next message for.
	Chat *ergonv1alpha1.AgentConversation
	// Elicit marks the Gate of an MCP server's question (elicit.go), whose Tool is the
	// server's.
	Elicit bool
}

// planner holds one planning pass.
type planner struct {
	f      *Facts
	now    metav1.Time
	plan   *Plan
	steps  map[string]*ergonv1alpha1.StepStatus
	order  []string // step names in status order
	active int      // pod and scene steps of this Run that are running
	// stopReason is set when the Run stops everything: Cancelled or RunTimedOut.
	stopReason string
	// failedStep is the first step whose failure fails the Run.
	failedStep string
	params     map[string]string
	requeue    time.Time
	// data and vars are what templates and conditions see; see templateData.
	data map[string]any
	vars expr.Vars
	// outcomes is the state of finally steps and failure branches; see finally.go.
	outcomes outcomeState
	// pinned is the UID of the Workspace the Run binds its steps to (pinWorkspace).
	pinned types.UID
	// storage counts what the Run keeps in ConfigMaps, as far as this pass (limits.go).
	storage ergonv1alpha1.StorageStatus
	// slotsAsked is set once Facts.Slots was asked; slotRefused when the last capacity
	// check failed for want of a slot (hasCapacity).
	slotsAsked, slotRefused bool
}

// Decide computes the plan for one Run.
func Decide(f *Facts) *Plan {
	p := &planner{
		f:      f,
		now:    metav1.NewTime(f.Now),
		plan:   &Plan{},
		steps:  map[string]*ergonv1alpha1.StepStatus{},
		params: ResolveParams(f.Scene.Spec, f.Run.Spec.Params),
	}
	status := f.Run.Status.DeepCopy()
	status.ObservedGeneration = f.Run.Generation
	if status.StartedAt == nil {
		status.StartedAt = &p.now
		p.tellProtocol()
	}
	p.pinned = p.pinWorkspace(status)
	p.storage = storedSoFar(status)
	for i := range status.Steps {
		s := &status.Steps[i]
		p.steps[s.Name] = s
		p.order = append(p.order, s.Name)
		p.active += activeUnits(f.Scene.Steps[s.Name], s)
		if s.Phase == ergonv1alpha1.StepFailed && !p.tolerated(f.Scene.Steps[s.Name]) && p.failedStep == "" {
			p.failedStep = s.Name
		}
	}
	p.stopReason = p.stopping(status)

	for _, name := range f.Scene.Graph.TopologicalOrder() {
		if step := f.Scene.Steps[name]; isControlFlow(step) {
			p.decideControlFlow(step, p.state(name))
			continue
		}
		p.decide(f.Scene.Steps[name])
	}
	p.releaseWorkspace()
	p.decideFinally()

	status.Steps = status.Steps[:0]
	for _, name := range p.order {
		status.Steps = append(status.Steps, *p.steps[name])
	}
	p.finish(status)
	status.Usage = RunUsage(status.Steps, f.Children)
	p.decideStores(status)
	p.resolveNames(status)
	status.Storage = p.storageStatus()
	p.plan.Events = FoldEvents(p.plan.Events)
	p.plan.CleanupPods = EndedPods(&f.Run.Status, f.Pods, f.UnitPods, f.KeepFailedPods)
	p.plan.Status = *status
	if !p.requeue.IsZero() && !status.Phase.Finished() {
		p.plan.RequeueAfter = max(p.requeue.Sub(f.Now), time.Millisecond)
	}
	p.decideLease()
	p.decideRetries()
	return p.plan
}

// stopping says why the Run stops everything, or "" when it does not.
func (p *planner) stopping(status *ergonv1alpha1.RunStatus) string {
	if p.f.Run.Spec.Cancel {
		return ergonv1alpha1.ReasonCancelled
	}
	if t := p.f.Run.Spec.Timeout; t != nil && status.StartedAt != nil {
		deadline := status.StartedAt.Add(t.Duration)
		if !p.f.Now.Before(deadline) {
			return ergonv1alpha1.ReasonRunTimedOut
		}
		p.wakeAt(deadline)
	}
	return ""
}

// state returns the status of a step, nil while it is Pending and has not been recorded.
func (p *planner) state(name string) *ergonv1alpha1.StepStatus {
	return p.steps[name]
}

// record returns the status entry of a step, creating it.
func (p *planner) record(name string) *ergonv1alpha1.StepStatus {
	if s, ok := p.steps[name]; ok {
		return s
	}
	s := &ergonv1alpha1.StepStatus{Name: name, Phase: ergonv1alpha1.StepPending}
	p.steps[name] = s
	p.order = append(p.order, name)
	return s
}

func (p *planner) wakeAt(t time.Time) {
	if p.requeue.IsZero() || t.Before(p.requeue) {
		p.requeue = t
	}
}

func (p *planner) event(warning bool, reason, format string, args ...any) {
	p.plan.Events = append(p.plan.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// stepEvent records a step's transition, which FoldEvents may fold with others of the plan.
func (p *planner) stepEvent(reason, step, format string, args ...any) {
	p.plan.Events = append(p.plan.Events, StepEvent(reason, step, format, args...))
}

// StepEvent is the Event of a step's transition (StepStarted, StepSucceeded, ...), which
// FoldEvents may fold with others.
func StepEvent(reason, step, format string, args ...any) Event {
	return Event{Reason: reason, Message: fmt.Sprintf(format, args...), step: step}
}

// decide moves one step forward as far as the facts allow.
func (p *planner) decide(step *compile.Step) {
	s := p.state(step.Name)
	if s != nil && s.Phase.Finished() {
		return
	}
	if p.stopReason != "" {
		p.stop(step, s)
		return
	}
	switch {
	case isPodStep(step):
		p.decidePodStep(step, s)
	case step.Spec.Scene != nil:
		p.decideSceneStep(step, s)
	case step.Spec.Gate != nil:
		p.decideGateStep(step, s)
	}
}

// stop ends a step that has not finished because the whole Run stops.
func (p *planner) stop(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	if s == nil {
		// A pod whose start the status did not record (the write was lost) is stopped too.
		latest := latestPod(p.f.Pods[step.Name])
		if latest == nil || latest.Phase == PodSucceeded || latest.Phase == PodFailed || latest.Phase == PodGone {
			// A step that never started needs no record.
			return
		}
		s = p.record(step.Name)
		s.Phase, s.PodName, s.Attempts = ergonv1alpha1.StepRunning, latest.Name, latest.Attempt
	}
	if isPodStep(step) && s.PodActive() {
		p.plan.DeletePods = append(p.plan.DeletePods, s.PodName)
	}
	if s.ChildRun != "" {
		p.plan.CancelChildren = append(p.plan.CancelChildren, s.ChildRun)
	}
	p.plan.CancelChildren = append(p.plan.CancelChildren, p.toolCallChildren(step.Name)...)
	p.plan.DeletePods = append(p.plan.DeletePods, p.toolCallPods(step.Name)...)
	p.end(s, ergonv1alpha1.StepCancelled, p.stopReason, "the Run stopped: "+stopMessage(p.stopReason))
}

func stopMessage(reason string) string {
	switch reason {
	case ergonv1alpha1.ReasonRunTimedOut:
		return "it ran past its timeout"
	case ergonv1alpha1.ReasonFinallyTimedOut:
		return "its finally steps ran past spec.finallyTimeout"
	}
	return "it was cancelled"
}

// end moves a step to a terminal phase.
func (p *planner) end(s *ergonv1alpha1.StepStatus, phase ergonv1alpha1.StepPhase, reason, message string) {
	s.Phase, s.Reason, s.Message = phase, reason, message
	s.FinishedAt = &p.now
	s.NextAttemptAt = nil
	p.refresh(s.Name)
	switch phase {
	case ergonv1alpha1.StepSucceeded:
		p.stepEvent("StepSucceeded", s.Name, "Step %s succeeded", s.Name)
	case ergonv1alpha1.StepFailed:
		p.event(true, "StepFailed", "Step %s failed: %s", s.Name, message)
	case ergonv1alpha1.StepSkipped:
		p.event(false, "StepSkipped", "Step %s skipped: %s", s.Name, message)
	}
}

// ready decides whether a step that has not started may start: it returns false while a
// dependency is running, and skips the step (returning false) when it must not run.
func (p *planner) ready(step *compile.Step) bool {
	if p.suspended() {
		return false
	}
	deps := p.f.Scene.Dependencies(step.Name)
	for _, d := range deps {
		if ds := p.state(d); ds == nil || !ds.Phase.Finished() {
			return false
		}
	}
	// dependsOn keeps its rule; the outcomes after entries need are checked below.
	succeeded, failed := 0, ""
	for _, d := range step.Spec.DependsOn {
		switch ds := p.state(d); ds.Phase {
		case ergonv1alpha1.StepSucceeded:
			succeeded++
		case ergonv1alpha1.StepFailed:
			if failed == "" {
				failed = d
			}
		}
	}
	skip := func(reason, format string, args ...any) bool {
		p.end(p.record(step.Name), ergonv1alpha1.StepSkipped, reason, fmt.Sprintf(format, args...))
		return false
	}
	switch {
	case p.failedStep != "" && !p.outcomes.finalizing:
		return skip(ergonv1alpha1.ReasonRunFailing, "step %s failed, so no new step starts", p.failedStep)
	case failed != "":
		return skip(ergonv1alpha1.ReasonDependencyFailed, "its dependency %s failed", failed)
	case len(step.Spec.DependsOn) > 0 && succeeded == 0:
		return skip(ergonv1alpha1.ReasonDependenciesSkipped, "none of its dependencies succeeded")
	}
	if unmet := p.outcomeUnmet(step); unmet != "" {
		return skip(ergonv1alpha1.ReasonOutcomeNotMet, "%s", unmet)
	}
	for _, d := range deps {
		if out := p.state(d).Output; out != nil && out.Ref != nil {
			if msg, conflict := p.f.Conflicts[out.Ref.ConfigMap]; conflict {
				p.fail(p.record(step.Name), step, ergonv1alpha1.ReasonNameConflict,
					fmt.Sprintf("the output of its dependency %s cannot be used: %s", d, msg))
				return false
			}
		}
	}
	if step.When != nil {
		ok, err := step.When.Eval(p.exprVars())
		if err != nil {
			p.fail(p.record(step.Name), step, ergonv1alpha1.ReasonWhenError, fmt.Sprintf("when: %v", err))
			return false
		}
		if !ok {
			return skip(ergonv1alpha1.ReasonWhenFalse, "its condition %q is false", step.Spec.When)
		}
	}
	return true
}

// fail ends a step Failed; unless the step may fail, no new step of the Run starts.
func (p *planner) fail(s *ergonv1alpha1.StepStatus, step *compile.Step, reason, message string) {
	p.end(s, ergonv1alpha1.StepFailed, reason, message)
	if !p.tolerated(step) && p.failedStep == "" {
		p.failedStep = step.Name
	}
}

// render renders a step's templates, failing the step when they do not render.
func (p *planner) render(step *compile.Step) (*compile.Rendered, bool) {
	r, err := step.Render(p.templateData())
	if err != nil {
		p.fail(p.record(step.Name), step, ergonv1alpha1.ReasonTemplateError, err.Error())
		return nil, false
	}
	if n := len(r.AgentSystem) + len(r.AgentPrompt); n > MaxAgentPrompt {
		p.fail(p.record(step.Name), step, ergonv1alpha1.ReasonTemplateError, fmt.Sprintf(
			"the rendered system prompt and prompt are %d bytes; at most %d fit in the step's pod: "+
				"hand large data over as context (the outputs of dependencies) instead of through a template", n, MaxAgentPrompt))
		return nil, false
	}
	if problem := renderedProblem(r); problem != "" {
		p.fail(p.record(step.Name), step, ergonv1alpha1.ReasonRenderedTooLarge, problem)
		return nil, false
	}
	return r, true
}

// MaxAgentPrompt bounds an agent step's rendered system prompt and prompt together: they
// travel in a pod annotation, and a pod's annotations hold 256 KiB in all.
const MaxAgentPrompt = 200 << 10

// start records that a step starts now.
func (p *planner) start(s *ergonv1alpha1.StepStatus) {
	if s.StartedAt == nil {
		s.StartedAt = &p.now
		p.stepEvent("StepStarted", s.Name, "Step %s started", s.Name)
	}
}

// decideSceneStep runs another Scene as a child Run and mirrors its outcome.
func (p *planner) decideSceneStep(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	if s == nil || (s.Phase == ergonv1alpha1.StepPending && s.ChildRun == "") {
		if !p.ready(step) {
			return
		}
		if refusal := p.refuseDepth(); refusal != nil {
			p.fail(p.record(step.Name), step, refusal.Reason, refusal.Message)
			return
		}
		if !p.hasCapacity() {
			p.waitForSlot(step)
			return
		}
		r, ok := p.render(step)
		if !ok {
			return
		}
		name := naming.ChildRunName(p.f.Run.Name, string(step.Spec.Scene.Name), r.SceneParams)
		_, exists := p.f.Children[name]
		if refusal := p.refuseChild(); refusal != nil && !exists {
			p.fail(p.record(step.Name), step, refusal.Reason, refusal.Message)
			return
		}
		p.take()
		s = p.record(step.Name)
		s.Reason, s.Message = "", ""
		s.ChildRun = name
		s.Attempts = 1
		s.Phase = ergonv1alpha1.StepRunning
		p.start(s)
		if !exists {
			p.plan.Children = append(p.plan.Children, ChildRequest{
				Name: s.ChildRun, Step: step.Name, Scene: string(step.Spec.Scene.Name), Params: r.SceneParams,
			})
		}
		return
	}
	if msg, conflict := p.f.Conflicts[s.ChildRun]; conflict {
		p.active--
		p.fail(s, step, ergonv1alpha1.ReasonNameConflict, msg)
		return
	}
	child, ok := p.f.Children[s.ChildRun]
	if !ok {
		return // created, not observed yet
	}
	if child.Refused != "" {
		p.active--
		if child.NotAuthorized {
			p.fail(s, step, ergonv1alpha1.ReasonNotAuthorized, fmt.Sprintf("Ergon did not create the child Run %s: %s", s.ChildRun, child.Refused))
			return
		}
		p.fail(s, step, ergonv1alpha1.ReasonRunRefused, fmt.Sprintf("the API server refused the child Run %s: %s", s.ChildRun, child.Refused))
		return
	}
	switch child.Phase {
	case ergonv1alpha1.RunSucceeded:
		p.active--
		if out := child.Output; out != nil && out.Ref != nil {
			if msg, conflict := p.f.Conflicts[out.Ref.ConfigMap]; conflict {
				p.fail(s, step, ergonv1alpha1.ReasonNameConflict, msg)
				return
			}
		}
		s.Output = child.Output
		p.end(s, ergonv1alpha1.StepSucceeded, "", "")
	case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
		p.active--
		p.fail(s, step, ergonv1alpha1.ReasonChildRunFailed, fmt.Sprintf("child Run %s ended %s: %s", s.ChildRun, child.Phase, child.Message))
	}
}

// decideGateStep creates the step's Gate and waits for its decision.
func (p *planner) decideGateStep(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	if s == nil {
		if !p.ready(step) {
			return
		}
		r, ok := p.render(step)
		if !ok {
			return
		}
		s = p.record(step.Name)
		s.Gate = naming.GateName(p.f.Run.Name, step.Name)
		s.Attempts = 1
		s.Phase = ergonv1alpha1.StepWaiting
		p.start(s)
		if _, exists := p.f.Gates[s.Gate]; !exists {
			p.plan.Gates = append(p.plan.Gates, GateRequest{Name: s.Gate, Step: step, Message: r.GateMessage})
		}
		return
	}
	if msg, conflict := p.f.Conflicts[s.Gate]; conflict {
		p.fail(s, step, ergonv1alpha1.ReasonNameConflict, msg)
		return
	}
	gate, ok := p.f.Gates[s.Gate]
	if !ok || !gate.Decided {
		return
	}
	if gate.TimedOut && gate.Option == "" {
		p.fail(s, step, ergonv1alpha1.ReasonGateTimedOut, fmt.Sprintf("Gate %s timed out and names no onTimeout option", s.Gate))
		return
	}
	s.Decision = gate.Option
	if gate.Values != "" {
		// An input Gate's answer is the step's output, kept as a pod step's is.
		if len(gate.Values) > outputs.PreviewSize {
			if reason, message := p.keep(s, "the answer to step "+s.Name, StoreRequest{
				ConfigMap: naming.OutputConfigMapName(p.f.Run.Name, step.Name), Step: step.Name, Value: gate.Values}); reason != "" {
				p.fail(s, step, reason, message)
				return
			}
		}
		s.Output = outputs.Value(p.f.Run.Name, step.Name, gate.Values)
	}
	p.end(s, ergonv1alpha1.StepSucceeded, ergonv1alpha1.ReasonDecided, fmt.Sprintf("%s decided %s", gate.DecidedBy, gate.Option))
}

func isPodStep(step *compile.Step) bool {
	return step != nil && (step.Spec.Container != nil || step.Spec.Agent != nil)
}

// usesCapacity reports whether a running step counts against parallelism and the pod budget:
// a pod step for its pod, a scene step for its child Run.
func usesCapacity(step *compile.Step) bool {
	return isPodStep(step) || (step != nil && step.Spec.Scene != nil)
}
