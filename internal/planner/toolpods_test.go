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
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
)

var lintTool = &ergonv1alpha1.ContainerTool{Image: "lint:1", Command: []string{"lint", "--strict"},
	Args: []string{"{{ .args.path }}", "--level={{ .args.level }}"}, Parameters: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}}

// containerWorld is a toolWorld whose agent step has a container tool, lint, and the pods of
// its calls.
type containerWorld struct {
	*toolWorld
	toolPods map[string]ToolPodState
}

func newContainerWorld(t *testing.T, timeout *metav1.Duration, approval bool) *containerWorld {
	spec := ergonv1alpha1.SceneSpec{
		Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}},
		Steps: []ergonv1alpha1.Step{{Name: "work", Timeout: timeout, Agent: &ergonv1alpha1.AgentStep{Prompt: "p",
			Tools: []ergonv1alpha1.AgentTool{{Name: "lint", Container: lintTool, RequireApproval: approval}}}}},
	}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"}}
	run.Status.SceneSnapshot = &spec
	w := &toolWorld{t: t, scene: scene, run: run, now: t0, children: map[string]ChildState{}, gates: map[string]GateState{}}
	return &containerWorld{toolWorld: w, toolPods: map[string]ToolPodState{}}
}

func (w *containerWorld) plan() *Plan {
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{"work": w.pods},
		Outputs: map[string]Output{}, Children: w.children, Gates: w.gates, PodBudget: -1, MaxDepth: 3,
		ToolCalls: map[string]ToolCallFacts{"work": w.calls}, ToolPods: w.toolPods}
	p := Decide(f)
	w.run.Status = p.Status
	for _, req := range p.Pods {
		w.pods = append(w.pods, PodState{Name: req.Name, Attempt: req.Attempt, Phase: PodRunning})
	}
	return p
}

var lintCall = agentspec.ToolRequest{ID: "call_9", Tool: "lint", Kind: agentspec.RequestContainer,
	Arguments: `{"path":"./cmd","level":3}`}

func TestRenderToolArgv(t *testing.T) {
	for _, tc := range []struct {
		name, args    string
		command, argv []string
		err           string
	}{
		{"strings as they are, numbers as JSON", `{"path":"./a b","level":2}`, []string{"lint", "--strict"},
			[]string{"./a b", "--level=2"}, ""},
		{"objects and lists as JSON", `{"path":["x","y"],"level":{"n":true}}`, []string{"lint", "--strict"},
			[]string{`["x","y"]`, `--level={"n":true}`}, ""},
		{"null as the empty string", `{"path":"p","level":null}`, []string{"lint", "--strict"}, []string{"p", "--level="}, ""},
		{"a missing argument", `{"path":"p"}`, nil, nil, `container.args[1]: cannot render template`},
		{"no arguments at all", ``, nil, nil, `container.args[0]: cannot render template`},
		{"not an object", `[1,2]`, nil, nil, "the arguments are not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			command, args, err := RenderToolArgv(lintTool, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(command, "|") != strings.Join(tc.command, "|") || strings.Join(args, "|") != strings.Join(tc.argv, "|") {
				t.Fatalf("command %q args %q, want %q %q", command, args, tc.command, tc.argv)
			}
		})
	}
}

func TestAContainerToolCallRunsOnePodWhoseOutputIsStoredForTheNextAttempt(t *testing.T) {
	w := newContainerWorld(t, &metav1.Duration{Duration: 3 * time.Minute}, false)
	w.plan()
	w.handOver(lintCall)
	name := naming.ToolCallName("r", "work", "call_9")

	p := w.plan()
	if len(p.ToolPods) != 1 {
		t.Fatalf("tool pods = %+v", p.ToolPods)
	}
	req := p.ToolPods[0]
	if req.Name != name || req.Image != "lint:1" || req.Attempt != 1 || req.CallID != "call_9" || req.Deadline != 3*time.Minute ||
		strings.Join(req.Args, " ") != "./cmd --level=3" || strings.Join(req.Command, " ") != "lint --strict" {
		t.Fatalf("request = %+v", req)
	}
	if s := w.step(); s.Phase != ergonv1alpha1.StepWaiting || !strings.Contains(s.Message, "tool pod "+name) {
		t.Fatalf("the step says %s %q", s.Phase, s.Message)
	}
	// A manager that plans again (a restart) finds the pod by its name: nothing twice.
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name, UID: "u", Phase: PodRunning}}
	if p = w.plan(); len(p.ToolPods) != 0 || len(p.Pods) != 0 {
		t.Fatalf("again: tool pods %v, pods %v", p.ToolPods, p.Pods)
	}
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name, UID: "u", Phase: PodSucceeded}, Output: "2 findings"}
	p = w.plan()
	if len(p.ToolResults) != 1 || p.ToolResults[0].Results.Attempt != 1 ||
		p.ToolResults[0].Results.Results[0] != (agentspec.ToolResult{ID: "call_9", Content: "2 findings", ToolPod: name}) {
		t.Fatalf("tool results = %+v", p.ToolResults)
	}
	if len(p.Pods) != 1 || p.Pods[0].Attempt != 2 || len(p.ToolPods) != 0 {
		t.Fatalf("pods = %+v, tool pods %+v; want attempt 2 alone", p.Pods, p.ToolPods)
	}
}

func TestAContainerToolCallsEndEveryWayGivesAResult(t *testing.T) {
	name := naming.ToolCallName("r", "work", "call_9")
	long := strings.Repeat("x", maxToolResult+10)
	for _, tc := range []struct {
		name    string
		call    agentspec.ToolRequest
		pod     *ToolPodState
		want    string
		isError bool
	}{
		{"output", lintCall, &ToolPodState{Pod: PodState{Phase: PodSucceeded}, Output: "ok"}, "ok", false},
		{"output capped at 64 KiB", lintCall, &ToolPodState{Pod: PodState{Phase: PodSucceeded}, Output: long},
			"[truncated: 65536 of 65546 bytes shown]", false},
		{"an output that cannot be read", lintCall, &ToolPodState{Pod: PodState{Phase: PodSucceeded}, OutputErr: "log lost"},
			"its output cannot be read: log lost", true},
		{"a non-zero exit with its output", lintCall,
			&ToolPodState{Pod: PodState{Phase: PodFailed, ExitCode: new(int32(2))}, Output: "a.go:1: bad"},
			"error: the tool pod " + name + " failed (exit code 2)\na.go:1: bad", true},
		{"past its deadline", lintCall, &ToolPodState{Pod: PodState{Phase: PodFailed, Reason: "DeadlineExceeded",
			Message: "Pod was active on the node longer than the specified deadline"}},
			"failed: DeadlineExceeded: Pod was active", true},
		{"deleted", lintCall, &ToolPodState{Pod: PodState{Phase: PodGone}}, "was deleted before it ended", true},
		{"an image that cannot be pulled, past the pending timeout", lintCall, &ToolPodState{Pod: PodState{Phase: PodPending,
			Reason: "ImagePullBackOff", Message: "Back-off pulling image", CreatedAt: t0.Add(-11 * time.Minute)}},
			"did not start within 10m0s: ImagePullBackOff: Back-off pulling image", true},
		{"a template that reads a missing argument", agentspec.ToolRequest{ID: "call_9", Tool: "lint",
			Kind: agentspec.RequestContainer, Arguments: `{"level":1}`}, nil, "cannot render template", true},
		{"a tool the step lacks", agentspec.ToolRequest{ID: "call_9", Tool: "vet", Kind: agentspec.RequestContainer}, nil,
			`the step has no tool "vet"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newContainerWorld(t, nil, false)
			w.plan()
			w.handOver(tc.call)
			if tc.pod != nil {
				st := *tc.pod
				st.Pod.Name, st.Pod.UID = name, "u"
				w.toolPods[name] = st
			}
			p := w.plan()
			if len(p.ToolResults) != 1 {
				t.Fatalf("no result: tool pods %+v, step %+v", p.ToolPods, w.step())
			}
			r := p.ToolResults[0].Results.Results[0]
			if !strings.Contains(r.Content, tc.want) || r.Error != tc.isError {
				t.Fatalf("result = %+v, want %q (error %v)", r, tc.want, tc.isError)
			}
			if tc.pod != nil && r.ToolPod != name {
				t.Fatalf("result names pod %q, want %q", r.ToolPod, name)
			}
			if tc.pod != nil && tc.pod.Pod.Phase == PodPending && (len(p.DeletePods) != 1 || p.DeletePods[0] != name) {
				t.Fatalf("the pod that cannot start is not deleted: %v", p.DeletePods)
			}
			if len(p.Pods) != 1 || p.Pods[0].Attempt != 2 {
				t.Fatalf("pods = %+v, want attempt 2: a tool call never leaves the step stuck", p.Pods)
			}
		})
	}
}

func TestAContainerToolPodThatCannotStartWaitsForThePendingTimeout(t *testing.T) {
	w := newContainerWorld(t, nil, false)
	w.plan()
	w.handOver(lintCall)
	name := naming.ToolCallName("r", "work", "call_9")
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name, UID: "u", Phase: PodPending, Reason: "ImagePullBackOff",
		Message: "Back-off", CreatedAt: t0.Add(-time.Minute)}}
	p := w.plan()
	if len(p.ToolResults) != 0 || len(p.DeletePods) != 0 || p.RequeueAfter != 9*time.Minute {
		t.Fatalf("results %v, deletes %v, requeue %s", p.ToolResults, p.DeletePods, p.RequeueAfter)
	}
	if s := w.step(); !strings.Contains(s.Message, "cannot start yet: ImagePullBackOff") {
		t.Fatalf("the step says %q", s.Message)
	}
}

func TestAContainerToolCallThatNeedsApprovalRunsItsPodOnlyOnceApproved(t *testing.T) {
	w := newContainerWorld(t, nil, true)
	w.plan()
	call := lintCall
	call.Approval = true
	w.handOver(call)
	name := naming.ToolCallName("r", "work", "call_9")
	p := w.plan()
	if len(p.Gates) != 1 || p.Gates[0].Name != name || len(p.ToolPods) != 0 {
		t.Fatalf("gates %+v, tool pods %+v", p.Gates, p.ToolPods)
	}
	w.gates[name] = GateState{Decided: true, Option: "approve", DecidedBy: "alice"}
	p = w.plan()
	if len(p.ToolPods) != 1 || p.ToolPods[0].Deadline != DefaultToolPodDeadline {
		t.Fatalf("tool pods %+v", p.ToolPods)
	}
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name, UID: "u", Phase: PodSucceeded}, Output: "clean"}
	p = w.plan()
	r := p.ToolResults[0].Results.Results[0]
	if r.Content != "clean" || r.ToolPod != name || r.Approval == nil || !r.Approval.Approved || r.Approval.By != "alice" {
		t.Fatalf("result = %+v", r)
	}
}

func TestCancellingTheRunDeletesRunningToolPods(t *testing.T) {
	w := newContainerWorld(t, nil, false)
	w.plan()
	w.handOver(lintCall)
	name := naming.ToolCallName("r", "work", "call_9")
	w.plan()
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name, UID: "u", Phase: PodRunning}}
	w.run.Spec.Cancel = true
	p := w.plan()
	if !slices.Contains(p.DeletePods, name) || w.step().Phase != ergonv1alpha1.StepCancelled {
		t.Fatalf("deletes %v, step %s", p.DeletePods, w.step().Phase)
	}
}
