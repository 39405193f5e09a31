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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/wslease"
)

func agentStep(name string, tools ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Agent: &ergonv1alpha1.AgentStep{Prompt: "p", Tools: builtins(tools...)}}
}

func boundScene(steps ...ergonv1alpha1.Step) ergonv1alpha1.SceneSpec {
	return ergonv1alpha1.SceneSpec{
		Models:    map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://m", Model: "m"}},
		Workspace: &corev1.LocalObjectReference{Name: "ws"}, Steps: steps,
	}
}

// planBound runs the planner once for a Run of a bound Scene, with the Workspace as given,
// and applies the plan as world.plan does.
func (w *world) planBound(ws *WorkspaceFacts) *Plan {
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
		Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5, Workspace: ws}
	p := Decide(f)
	w.run.Status = p.Status
	for _, req := range p.Pods {
		w.pods[req.Step.Name] = append(w.pods[req.Step.Name], PodState{Name: req.Name, Attempt: req.Attempt, Phase: PodRunning})
	}
	w.last = p
	return p
}

// usable is a Workspace steps can use: Idle, with a claim of its own.
func usable() *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: "ns", UID: "ws-uid"},
		Status: ergonv1alpha1.WorkspaceStatus{Phase: ergonv1alpha1.WorkspaceIdle, ClaimName: "claim", ClaimUID: "claim-uid"}}
}

// recreated is the Workspace of usable's name, deleted and created again.
func recreated() *ergonv1alpha1.Workspace {
	ws := usable()
	ws.UID = "ws-uid-2"
	return ws
}

func stepOf(t *testing.T, status ergonv1alpha1.RunStatus, name string) ergonv1alpha1.StepStatus {
	t.Helper()
	for _, s := range status.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status of step %s", name)
	return ergonv1alpha1.StepStatus{}
}

func TestWhichStepsWriteToTheWorkspace(t *testing.T) {
	for _, tc := range []struct {
		step ergonv1alpha1.Step
		want bool
	}{
		{step("container"), true},
		{agentStep("shell", ergonv1alpha1.ToolReadFile, ergonv1alpha1.ToolShell), true},
		{agentStep("writer", ergonv1alpha1.ToolWriteFile), true},
		{agentStep("reader", ergonv1alpha1.ToolReadFile, ergonv1alpha1.ToolListFiles, ergonv1alpha1.ToolHTTPFetch), false},
		{agentStep("no tools"), false},
	} {
		spec := boundScene(tc.step)
		scene, errs := compile.Compile(&spec)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := WritesWorkspace(scene.Steps[tc.step.Name]); got != tc.want {
			t.Errorf("%s: WritesWorkspace = %v, want %v", tc.step.Name, got, tc.want)
		}
	}
}

func TestAWritingStepWaitsForTheLeaseThenStartsAndGivesItBack(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("edit", ergonv1alpha1.ToolWriteFile, ergonv1alpha1.ToolShell)), succeed)
	pod := naming.StepPodName("r", "edit", 1)

	// Another Run holds the lease: the step waits in line, and asks for its turn.
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: "other-pod", HolderRun: "other"})
	s := stepOf(t, p.Status, "edit")
	if s.Phase != ergonv1alpha1.StepWaiting || s.Reason != ergonv1alpha1.ReasonWorkspaceBusy || !strings.Contains(s.Message, "Run other") {
		t.Fatalf("step = %s %s %q, want Waiting WorkspaceBusy naming the holder", s.Phase, s.Reason, s.Message)
	}
	if s.StartedAt != nil || len(p.Pods) != 0 {
		t.Errorf("a waiting step started: startedAt %v, pods %v", s.StartedAt, p.Pods)
	}
	if len(p.TakeLeases) != 1 || p.TakeLeases[0].Pod != pod {
		t.Errorf("TakeLeases = %+v, want one for %s", p.TakeLeases, pod)
	}
	if p.Status.Phase != ergonv1alpha1.RunWaiting || !strings.Contains(succeededCondition(p).Message, "WorkspaceBusy") {
		t.Errorf("Run = %s %q, want Waiting for the Workspace", p.Status.Phase, succeededCondition(p).Message)
	}
	if p.RequeueAfter <= 0 || p.RequeueAfter > workspaceRecheck {
		t.Errorf("RequeueAfter = %s: a waiting step must look again", p.RequeueAfter)
	}
	if p.ReleaseLease != "" {
		t.Errorf("released %s, which is not this Run's", p.ReleaseLease)
	}

	// Its turn: the controller took the lease for it. The pod starts now.
	w.now = w.now.Add(time.Minute)
	p = w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: pod, HolderIsThisRun: true})
	if len(p.Pods) != 1 || p.Pods[0].Name != pod || len(p.TakeLeases) != 0 || p.ReleaseLease != "" {
		t.Fatalf("pods %v, take %v, release %q: want the pod and nothing else", p.Pods, p.TakeLeases, p.ReleaseLease)
	}
	if s := stepOf(t, p.Status, "edit"); s.StartedAt == nil || !s.StartedAt.Time.Equal(w.now) {
		t.Errorf("startedAt = %v, want when the lease was held (%v)", s.StartedAt, w.now)
	}

	// While it runs it keeps the lease; when it ends, it gives it back.
	p = w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: pod, HolderIsThisRun: true})
	if p.ReleaseLease != "" {
		t.Errorf("a running step gave its lease back")
	}
	w.kubelet()
	p = w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: pod, HolderIsThisRun: true})
	if p.Status.Phase != ergonv1alpha1.RunSucceeded || p.ReleaseLease != pod {
		t.Errorf("Run %s, release %q: want Succeeded and the lease given back", p.Status.Phase, p.ReleaseLease)
	}
}

func TestReadingStepsNeedNoLease(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("read", ergonv1alpha1.ToolReadFile)), succeed)
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: "other-pod", HolderRun: "other"})
	if len(p.Pods) != 1 || len(p.TakeLeases) != 0 {
		t.Errorf("pods %v, take %v: a reader starts beside a writer", p.Pods, p.TakeLeases)
	}
}

func TestAStepWaitsForAMissingWorkspaceUntilItsPendingTimeout(t *testing.T) {
	spec := boundScene(step("build"))
	spec.PendingTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	w := newWorld(t, spec, succeed)
	missing := &WorkspaceFacts{Name: "ws"}
	p := w.planBound(missing)
	s := stepOf(t, p.Status, "build")
	if s.Phase != ergonv1alpha1.StepWaiting || s.Reason != ergonv1alpha1.ReasonWorkspaceNotFound || !strings.Contains(s.Message, "Workspace ws does not exist") {
		t.Fatalf("step = %s %s %q", s.Phase, s.Reason, s.Message)
	}
	if len(p.Pods) != 0 || len(p.TakeLeases) != 0 || len(p.Events) == 0 || !p.Events[0].Warning {
		t.Errorf("pods %v, take %v, events %v: want no pod, no lease, one warning", p.Pods, p.TakeLeases, p.Events)
	}
	if p.Status.Workspace == nil || p.Status.Workspace.Name != "ws" || p.Status.Workspace.UID != "" {
		t.Errorf("pinned %+v, want the name and no UID yet", p.Status.Workspace)
	}
	// Still missing past the pendingTimeout counted from the Run's start: the step fails.
	w.now = t0.Add(5 * time.Minute)
	p = w.planBound(missing)
	s = stepOf(t, p.Status, "build")
	if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonWorkspaceNotFound || p.Status.Phase != ergonv1alpha1.RunFailed {
		t.Errorf("step %s %s, Run %s: want the step and Run failed for the missing Workspace", s.Phase, s.Reason, p.Status.Phase)
	}
}

func TestAFailedWorkspaceHoldsStepsBack(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("read", ergonv1alpha1.ToolReadFile)), succeed)
	ws := usable()
	ws.Status.Phase = ergonv1alpha1.WorkspaceFailed
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: ws})
	if s := stepOf(t, p.Status, "read"); s.Phase != ergonv1alpha1.StepWaiting || s.Reason != ergonv1alpha1.ReasonWorkspaceNotReady || len(p.Pods) != 0 {
		t.Errorf("step %s %s, pods %v", s.Phase, s.Reason, p.Pods)
	}
}

func TestARetryQueuesAgainAndTheFailedAttemptGivesTheLeaseBack(t *testing.T) {
	st := step("build")
	st.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
	w := newWorld(t, boundScene(st), func(_ string, attempt int32) PodPhase {
		if attempt == 1 {
			return PodFailed
		}
		return PodSucceeded
	})
	first, second := naming.StepPodName("r", "build", 1), naming.StepPodName("r", "build", 2)
	mine := func(holder string) *WorkspaceFacts {
		return &WorkspaceFacts{Name: "ws", Object: usable(), Holder: holder, HolderIsThisRun: true}
	}
	if p := w.planBound(mine(first)); len(p.Pods) != 1 {
		t.Fatalf("attempt 1 did not start: %v", p.Pods)
	}
	w.kubelet()
	p := w.planBound(mine(first))
	if p.ReleaseLease != first {
		t.Errorf("release = %q, want the failed attempt's %s", p.ReleaseLease, first)
	}
	if len(p.TakeLeases) != 1 || p.TakeLeases[0].Pod != second || len(p.Pods) != 0 {
		t.Errorf("take %v, pods %v: the retry queues for the lease again", p.TakeLeases, p.Pods)
	}
	p = w.planBound(mine(second))
	if len(p.Pods) != 1 || p.Pods[0].Attempt != 2 {
		t.Errorf("attempt 2 did not start with the lease: %v", p.Pods)
	}
}

func TestACancelledRunGivesBackALeaseItsWaitingStepWasGiven(t *testing.T) {
	spec := boundScene(step("build"))
	spec.Parallelism = new(int32(1))
	spec.Steps = append(spec.Steps, step("other"))
	w := newWorld(t, spec, func(string, int32) PodPhase { return "" })
	pod := naming.StepPodName("r", "build", 1)
	w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: "x", HolderRun: "x"})
	w.run.Spec.Cancel = true
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: pod, HolderIsThisRun: true})
	if p.Status.Phase != ergonv1alpha1.RunCancelled || p.ReleaseLease != pod {
		t.Errorf("Run %s, release %q: want Cancelled and the lease given back", p.Status.Phase, p.ReleaseLease)
	}
}

func succeededCondition(p *Plan) metav1.Condition {
	for _, c := range p.Status.Conditions {
		if c.Type == ergonv1alpha1.ConditionSucceeded {
			return c
		}
	}
	return metav1.Condition{}
}

func TestARunBindsStepsOnlyToTheWorkspaceItStartedWith(t *testing.T) {
	spec := boundScene(step("first"), step("second"))
	spec.Steps[1].DependsOn = []string{"first"}
	w := newWorld(t, spec, succeed)
	w.run.Status.Workspace = &ergonv1alpha1.PinnedWorkspace{Name: "ws", UID: "ws-uid"}
	first := naming.StepPodName("r", "first", 1)
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: first, HolderIsThisRun: true})
	if len(p.Pods) != 1 || p.Status.Workspace.UID != "ws-uid" {
		t.Fatalf("pods %v, pinned %+v: the step of the Workspace it started with starts", p.Pods, p.Status.Workspace)
	}
	w.kubelet()

	// The user deletes the Workspace and creates it again: the next step fails, and makes nothing.
	p = w.planBound(&WorkspaceFacts{Name: "ws", Object: recreated()})
	s := stepOf(t, p.Status, "second")
	if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonWorkspaceReplaced {
		t.Fatalf("step = %s %s %q, want Failed WorkspaceReplaced", s.Phase, s.Reason, s.Message)
	}
	for _, want := range []string{"Workspace ws", "ws-uid", "ws-uid-2"} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("message %q does not name %s", s.Message, want)
		}
	}
	if len(p.Pods) != 0 || len(p.TakeLeases) != 0 || p.Status.Workspace.UID != "ws-uid" {
		t.Errorf("pods %v, take %v, pinned %+v: want nothing made and the pin kept", p.Pods, p.TakeLeases, p.Status.Workspace)
	}
	if p.Status.Phase != ergonv1alpha1.RunFailed {
		t.Errorf("Run %s, want Failed", p.Status.Phase)
	}
}

func TestAWorkspaceDeletedAfterTheRunStartedFailsItsNextStep(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("read", ergonv1alpha1.ToolReadFile)), succeed)
	w.run.Status.Workspace = &ergonv1alpha1.PinnedWorkspace{Name: "ws", UID: "ws-uid"}
	p := w.planBound(&WorkspaceFacts{Name: "ws"})
	if s := stepOf(t, p.Status, "read"); s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonWorkspaceReplaced ||
		!strings.Contains(s.Message, "was deleted") {
		t.Errorf("step = %s %s %q, want Failed WorkspaceReplaced: the Workspace it started with cannot come back", s.Phase, s.Reason, s.Message)
	}
}

func TestARunThatStartedBeforeItsWorkspaceExistedPinsTheFirstOneItSees(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("read", ergonv1alpha1.ToolReadFile)), succeed)
	w.run.Status.Workspace = &ergonv1alpha1.PinnedWorkspace{Name: "ws"}
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable()})
	if len(p.Pods) != 1 || p.Status.Workspace == nil || p.Status.Workspace.UID != "ws-uid" {
		t.Errorf("pods %v, pinned %+v: want the step started and the Workspace's UID pinned", p.Pods, p.Status.Workspace)
	}
}

func TestAWorkspaceWithoutAClaimOfItsOwnHoldsStepsBack(t *testing.T) {
	w := newWorld(t, boundScene(agentStep("read", ergonv1alpha1.ToolReadFile)), succeed)
	ws := usable()
	ws.Status.ClaimUID = ""
	p := w.planBound(&WorkspaceFacts{Name: "ws", Object: ws})
	if s := stepOf(t, p.Status, "read"); s.Phase != ergonv1alpha1.StepWaiting || s.Reason != ergonv1alpha1.ReasonWorkspaceNotReady || len(p.Pods) != 0 {
		t.Errorf("step %s %s, pods %v: a step must not mount a claim the Workspace has not made its own", s.Phase, s.Reason, p.Pods)
	}
	p = w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), LeaseConflict: "Lease x is not Workspace ws's"})
	if s := stepOf(t, p.Status, "read"); s.Reason != ergonv1alpha1.ReasonWorkspaceNotReady || s.Message != "Lease x is not Workspace ws's" {
		t.Errorf("step %s %s %q: want it held back by a Lease someone else made", s.Phase, s.Reason, s.Message)
	}
}

func TestAContainerToolOfAReplacedWorkspaceMakesNoPod(t *testing.T) {
	w := newContainerWorld(t, nil, false)
	w.scene.Spec.Workspace = &corev1.LocalObjectReference{Name: "ws"}
	w.run.Status.Workspace = &ergonv1alpha1.PinnedWorkspace{Name: "ws", UID: "ws-uid"}
	w.plan()
	w.handOver(lintCall)
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{"work": w.pods},
		Outputs: map[string]Output{}, Children: w.children, Gates: w.gates, PodBudget: -1, MaxDepth: 3,
		ToolCalls: map[string]ToolCallFacts{"work": w.calls}, ToolPods: w.toolPods,
		Workspace: &WorkspaceFacts{Name: "ws", Object: recreated()}}
	p := Decide(f)
	if len(p.ToolPods) != 0 || len(p.Pods) != 0 {
		t.Fatalf("tool pods %v, pods %v: nothing may be made in a Workspace the Run did not start with", p.ToolPods, p.Pods)
	}
	if len(p.ToolResults) != 1 || !strings.Contains(p.ToolResults[0].Results.Results[0].Content, "ws-uid-2") {
		t.Errorf("tool results %+v, want the call failed naming the new UID", p.ToolResults)
	}
}

// builtins are the AgentTools of built-in tools, by name.
func builtins(names ...string) []ergonv1alpha1.AgentTool {
	tools := make([]ergonv1alpha1.AgentTool, 0, len(names))
	for _, n := range names {
		tools = append(tools, ergonv1alpha1.AgentTool{Name: n})
	}
	return tools
}

func TestTheLeaseIsTakenQueuedOrKeptAsItsClaimsSay(t *testing.T) {
	writer := ergonv1alpha1.Step{Name: "w", Container: &ergonv1alpha1.ContainerStep{Image: "x", Command: []string{"make"}}}
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	other := wslease.Claim{Pod: "other-pod", Run: "other", RunUID: "other-uid", Since: old}
	cases := []struct {
		name   string
		lease  LeaseFacts
		holder string // of the lease the plan writes; "" for no write
		queue  int
	}{
		{"a free lease that does not exist yet is taken", LeaseFacts{}, "mine", 0},
		{"a lease held by a live claim queues the step", LeaseFacts{Exists: true,
			State: wslease.State{Holder: &other}, Live: map[string]bool{"other-pod": true}}, "other-pod", 1},
		{"a claim whose Run no longer holds it is dropped, and the lease taken", LeaseFacts{Exists: true,
			State: wslease.State{Holder: &other}, Live: map[string]bool{"other-pod": false}}, "mine", 0},
		{"a claim gather could not tell about counts as live", LeaseFacts{Exists: true,
			State: wslease.State{Holder: &other}}, "other-pod", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, boundScene(writer), succeed)
			w.run.UID = "my-uid"
			p := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Lease: c.lease})
			if len(p.TakeLeases) != 1 || p.LeaseWrite == nil {
				t.Fatalf("take %v, write %+v: want the step to ask and the lease written", p.TakeLeases, p.LeaseWrite)
			}
			s := p.LeaseWrite.State
			holder := s.Holder.Pod
			if holder == p.TakeLeases[0].Pod {
				holder = "mine"
				if s.Holder.RunUID != "my-uid" || !s.Holder.Since.Equal(w.now) {
					t.Errorf("the claim %+v is not this Run's, made now", s.Holder)
				}
			}
			if holder != c.holder || len(s.Queue) != c.queue {
				t.Errorf("holder %s, %d in line; want %s, %d", holder, len(s.Queue), c.holder, c.queue)
			}
		})
	}
	t.Run("nothing is written when nothing changes", func(t *testing.T) {
		w := newWorld(t, boundScene(writer), succeed)
		w.run.UID = "my-uid"
		first := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Lease: LeaseFacts{Exists: true,
			State: wslease.State{Holder: &other}, Live: map[string]bool{"other-pod": true}}})
		queued := first.LeaseWrite.State
		again := w.planBound(&WorkspaceFacts{Name: "ws", Object: usable(), Holder: "other-pod", HolderRun: "other",
			Lease: LeaseFacts{Exists: true, State: queued, Live: map[string]bool{"other-pod": true}}})
		if again.LeaseWrite != nil {
			t.Errorf("wrote %+v though the step was in line already", again.LeaseWrite)
		}
	})
}
