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
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// toolWorld is an agent step whose attempts hand tool calls over, and what the controller
// found around it.
type toolWorld struct {
	t        *testing.T
	scene    *compile.Scene
	run      *ergonv1alpha1.Run
	now      time.Time
	pods     []PodState
	children map[string]ChildState
	gates    map[string]GateState
	calls    ToolCallFacts
	depth    int
	// childRuns and limits are the child Runs the Run made and the cause caps (calls.go).
	childRuns int
	limits    cause.Limits
}

func newToolWorld(t *testing.T, retry *ergonv1alpha1.RetryPolicy) *toolWorld {
	spec := ergonv1alpha1.SceneSpec{
		Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}},
		Steps: []ergonv1alpha1.Step{{Name: "work", Retry: retry, Agent: &ergonv1alpha1.AgentStep{Prompt: "p", Tools: []ergonv1alpha1.AgentTool{
			{Scene: "summarizer"}, {Name: "http_fetch", RequireApproval: true}, {Name: "deploy", Scene: "deployer", RequireApproval: true},
		}}}},
	}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"}}
	run.Status.SceneSnapshot = &spec
	return &toolWorld{t: t, scene: scene, run: run, now: t0, children: map[string]ChildState{}, gates: map[string]GateState{}}
}

func (w *toolWorld) plan() *Plan {
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{"work": w.pods},
		Outputs: map[string]Output{}, Children: w.children, Gates: w.gates, PodBudget: -1, Depth: w.depth, MaxDepth: 3,
		ToolCalls: map[string]ToolCallFacts{"work": w.calls}, ChildRuns: w.childRuns, Calls: w.limits}
	p := Decide(f)
	w.run.Status = p.Status
	for _, req := range p.Pods {
		w.pods = append(w.pods, PodState{Name: req.Name, Attempt: req.Attempt, Phase: PodRunning})
	}
	return p
}

// handOver ends the running attempt as the runtime does when it hands calls over.
func (w *toolWorld) handOver(calls ...agentspec.ToolRequest) {
	last := &w.pods[len(w.pods)-1]
	last.Phase, last.Reason, last.Message = PodFailed, agentspec.ReasonToolCallsPending, "the agent waits for tool calls"
	last.ExitCode, last.FinishedAt = new(int32(7)), w.now
	p := w.plan()
	s := w.step()
	if s.Phase != ergonv1alpha1.StepWaiting || s.Reason != ReasonToolCallPending || p.RequeueAfter != toolCallsPoll {
		w.t.Fatalf("after the hand-over: %s %s %q, requeue %s", s.Phase, s.Reason, s.Message, p.RequeueAfter)
	}
	w.calls = ToolCallFacts{Pending: &agentspec.Pending{Attempt: last.Attempt, Calls: calls}}
}

func (w *toolWorld) step() ergonv1alpha1.StepStatus {
	for _, s := range w.run.Status.Steps {
		if s.Name == "work" {
			return s
		}
	}
	w.t.Fatal("no status of step work")
	return ergonv1alpha1.StepStatus{}
}

func (w *toolWorld) fail(reason string) {
	last := &w.pods[len(w.pods)-1]
	last.Phase, last.Reason, last.ExitCode, last.FinishedAt = PodFailed, reason, new(int32(5)), w.now
}

var (
	sceneCall    = agentspec.ToolRequest{ID: "call_1", Tool: "summarizer", Kind: agentspec.RequestScene, Arguments: `{"text":"hi","n":3}`}
	approvalCall = agentspec.ToolRequest{ID: "call_2", Tool: "http_fetch", Kind: agentspec.RequestApproval, Arguments: `{"url":"https://x"}`}
	approvedCall = agentspec.ToolRequest{ID: "call_3", Tool: "deploy", Kind: agentspec.RequestScene, Approval: true, Arguments: `{}`}
)

func TestASceneToolCallRunsAChildRunAndItsOutputIsStoredForTheNextAttempt(t *testing.T) {
	w := newToolWorld(t, &ergonv1alpha1.RetryPolicy{Limit: 1})
	w.plan()
	w.pods[0].Phase = PodRunning
	w.handOver(sceneCall)
	child := naming.ToolCallName("r", "work", "call_1")

	p := w.plan()
	if len(p.Children) != 1 || p.Children[0].Name != child || p.Children[0].Scene != "summarizer" ||
		p.Children[0].Params["text"] != "hi" || p.Children[0].Params["n"] != "3" {
		t.Fatalf("children = %+v", p.Children)
	}
	if s := w.step(); !strings.Contains(s.Message, child) || s.Phase != ergonv1alpha1.StepWaiting {
		t.Fatalf("the step says %s %q", s.Phase, s.Message)
	}
	// A manager that plans again (a restart) finds the child by its name: nothing twice.
	w.children[child] = ChildState{Phase: ergonv1alpha1.RunRunning}
	if p = w.plan(); len(p.Children) != 0 || len(p.Pods) != 0 {
		t.Fatalf("again: children %v, pods %v", p.Children, p.Pods)
	}
	w.children[child] = ChildState{Phase: ergonv1alpha1.RunSucceeded, Value: "SUMMARY"}
	p = w.plan()
	if len(p.ToolResults) != 1 || p.ToolResults[0].Results.Attempt != 1 ||
		p.ToolResults[0].Results.Results[0] != (agentspec.ToolResult{ID: "call_1", Content: "SUMMARY", ChildRun: child}) {
		t.Fatalf("tool results = %+v", p.ToolResults)
	}
	if len(p.Pods) != 1 || p.Pods[0].Attempt != 2 {
		t.Fatalf("pods = %+v, want attempt 2", p.Pods)
	}
	var stored agentspec.Results
	if err := json.Unmarshal(p.ToolResults[0].JSON, &stored); err != nil || !reflect.DeepEqual(stored, p.ToolResults[0].Results) {
		t.Fatalf("the results as stored %s do not read back as the results (%v)", p.ToolResults[0].JSON, err)
	}
	if got := w.step().ToolResultsSHA256; got != wire.Digest(p.ToolResults[0].JSON) || p.ToolResults[0].UID != "" {
		t.Fatalf("the status records digest %q for results %s, UID %q; want their digest and a new ConfigMap", got,
			p.ToolResults[0].JSON, p.ToolResults[0].UID)
	}
	// The handed-over attempt used no retry: attempt 2 failing retries, attempt 3 fails.
	w.calls.Stored = 1
	w.fail("ModelUnavailable")
	if p = w.plan(); w.step().Phase != ergonv1alpha1.StepRetrying && len(p.Pods) != 1 {
		t.Fatalf("after attempt 2 failed: %s, pods %v", w.step().Phase, p.Pods)
	}
	w.plan()
	w.fail("ModelUnavailable")
	w.plan()
	if s := w.step(); s.Phase != ergonv1alpha1.StepFailed || !strings.Contains(s.Message, "attempt 2 of 2") {
		t.Fatalf("after attempt 3 failed: %s %q", s.Phase, s.Message)
	}
}

func TestACallThatNeedsApprovalWaitsForItsGate(t *testing.T) {
	gate := naming.ToolCallName("r", "work", "call_2")
	for _, tc := range []struct {
		name     string
		decision GateState
		want     agentspec.ToolResult
	}{
		{"approved", GateState{Decided: true, Option: "approve", DecidedBy: "alice"},
			agentspec.ToolResult{ID: "call_2", Approval: &agentspec.Approval{Approved: true, By: "alice", Gate: gate}}},
		{"rejected", GateState{Decided: true, Option: "reject", DecidedBy: "bob", Comment: "not that host"},
			agentspec.ToolResult{ID: "call_2", Error: true, Content: "the call was rejected by bob: not that host",
				Approval: &agentspec.Approval{By: "bob", Comment: "not that host", Gate: gate}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newToolWorld(t, nil)
			w.plan()
			w.handOver(approvalCall)
			p := w.plan()
			if len(p.Gates) != 1 || p.Gates[0].Name != gate || p.Gates[0].ToolCall != "call_2" ||
				!strings.Contains(p.Gates[0].Message, `the tool http_fetch with the arguments:`+"\n"+`{"url":"https://x"}`) {
				t.Fatalf("gates = %+v", p.Gates)
			}
			w.gates[gate] = GateState{}
			if p = w.plan(); len(p.Gates) != 0 || len(p.ToolResults) != 0 || !strings.Contains(w.step().Message, "approval") {
				t.Fatalf("undecided: gates %v, results %v, %q", p.Gates, p.ToolResults, w.step().Message)
			}
			w.gates[gate] = tc.decision
			p = w.plan()
			if len(p.Children) != 0 || len(p.ToolResults) != 1 || len(p.Pods) != 1 {
				t.Fatalf("decided: %+v", p)
			}
			got := p.ToolResults[0].Results.Results[0]
			if got.Content != tc.want.Content || got.Error != tc.want.Error || *got.Approval != *tc.want.Approval {
				t.Fatalf("result = %+v (%+v), want %+v (%+v)", got, got.Approval, tc.want, tc.want.Approval)
			}
		})
	}
}

func TestAnApprovedSceneCallThenRunsItsChild(t *testing.T) {
	w := newToolWorld(t, nil)
	w.plan()
	w.handOver(approvedCall, sceneCall)
	name := naming.ToolCallName("r", "work", "call_3")
	p := w.plan()
	if len(p.Gates) != 1 || len(p.Children) != 1 || p.Children[0].Scene != "summarizer" {
		t.Fatalf("first: the Gate of deploy and the child of summarizer; got gates %v children %v", p.Gates, p.Children)
	}
	w.gates[name] = GateState{Decided: true, Option: "approve", DecidedBy: "alice"}
	w.children[naming.ToolCallName("r", "work", "call_1")] = ChildState{Phase: ergonv1alpha1.RunFailed, Message: "boom"}
	p = w.plan()
	if len(p.Children) != 1 || p.Children[0].Name != name || p.Children[0].Scene != "deployer" || len(p.ToolResults) != 0 {
		t.Fatalf("approved: children %v results %v", p.Children, p.ToolResults)
	}
	w.children[name] = ChildState{Phase: ergonv1alpha1.RunSucceeded, Value: "deployed"}
	p = w.plan()
	if len(p.ToolResults) != 1 {
		t.Fatalf("results = %v", p.ToolResults)
	}
	rs := p.ToolResults[0].Results.Results
	if rs[0].Content != "deployed" || !rs[0].Approval.Approved || !rs[1].Error || !strings.Contains(rs[1].Content, "ended Failed: boom") {
		t.Fatalf("results = %+v", rs)
	}
}

// The Scene says which tools need approval: a call the pod hands over without asking for
// approval waits for its Gate all the same, and the Gate request carries the tool, whose
// approval says who decides.
func TestACallOfAToolThatNeedsApprovalWaitsForItsGateWhateverThePodSays(t *testing.T) {
	w := newToolWorld(t, nil)
	w.plan()
	unasked := approvedCall
	unasked.Approval = false
	w.handOver(unasked)
	p := w.plan()
	if len(p.Gates) != 1 || p.Gates[0].Name != naming.ToolCallName("r", "work", "call_3") || len(p.Children) != 0 {
		t.Fatalf("a call of deploy, which needs approval: gates %v, children %v", p.Gates, p.Children)
	}
	if tool := p.Gates[0].Tool; tool == nil || tool.Scene != "deployer" || !tool.NeedsApproval() {
		t.Fatalf("the Gate request's tool = %+v", tool)
	}
}

func TestToolCallsThatCannotRunAreAnsweredWithAnError(t *testing.T) {
	w := newToolWorld(t, nil)
	w.depth = 3
	w.plan()
	w.handOver(sceneCall, agentspec.ToolRequest{ID: "call_9", Tool: "summarizer", Kind: agentspec.RequestScene, Arguments: `{"x":"1"}`})
	w.calls.Invalid = map[string]string{"call_9": `the Scene summarizer has no param "x"`}
	p := w.plan()
	if len(p.Children) != 0 || len(p.ToolResults) != 1 {
		t.Fatalf("plan: %+v", p)
	}
	rs := p.ToolResults[0].Results.Results
	if !strings.Contains(rs[0].Content, "deeper than 3") || !strings.Contains(rs[1].Content, `no param "x"`) {
		t.Fatalf("results = %+v", rs)
	}
}

func TestCancellingTheRunCancelsTheChildrenOfToolCalls(t *testing.T) {
	w := newToolWorld(t, nil)
	w.plan()
	w.handOver(sceneCall)
	w.plan()
	child := naming.ToolCallName("r", "work", "call_1")
	w.children[child] = ChildState{Phase: ergonv1alpha1.RunRunning}
	w.run.Spec.Cancel = true
	p := w.plan()
	if len(p.CancelChildren) != 1 || p.CancelChildren[0] != child || w.step().Phase != ergonv1alpha1.StepCancelled {
		t.Fatalf("cancel: %v, step %s", p.CancelChildren, w.step().Phase)
	}
}

func TestToolCallsWhoseCheckpointNeverArrivesFailTheStep(t *testing.T) {
	w := newToolWorld(t, nil)
	w.plan()
	w.handOver(sceneCall)
	w.calls = ToolCallFacts{}
	w.now = w.now.Add(time.Minute)
	if w.plan(); w.step().Phase != ergonv1alpha1.StepWaiting {
		t.Fatalf("after a minute: %s", w.step().Phase)
	}
	w.now = w.now.Add(time.Minute)
	w.plan()
	if s := w.step(); s.Phase != ergonv1alpha1.StepFailed || s.Reason != ReasonToolCallsLost {
		t.Fatalf("after two minutes: %s %s", s.Phase, s.Reason)
	}
}

func TestArgumentParams(t *testing.T) {
	for _, tc := range []struct {
		args string
		want map[string]string
		err  bool
	}{
		{"", map[string]string{}, false},
		{`{"a":"x","b":2,"c":true,"d":{"e":[1]}}`, map[string]string{"a": "x", "b": "2", "c": "true", "d": `{"e":[1]}`}, false},
		{`[1]`, nil, true},
	} {
		got, err := ArgumentParams(tc.args)
		if (err != nil) != tc.err || len(got) != len(tc.want) {
			t.Errorf("ArgumentParams(%s) = %v, %v", tc.args, got, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ArgumentParams(%s)[%s] = %q, want %q", tc.args, k, got[k], v)
			}
		}
	}
}
