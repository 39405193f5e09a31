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
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

func TestAgentLogDue(t *testing.T) {
	running := PodState{Phase: PodRunning}
	for _, c := range []struct {
		name string
		pod  PodState
		seen AgentSeen
		want bool
	}{
		{name: "a running pod never read", pod: running, want: true},
		{name: "a running pod read within the interval", pod: running, seen: AgentSeen{At: t0.Add(-5 * time.Second)}},
		{name: "a running pod read an interval ago", pod: running, seen: AgentSeen{At: t0.Add(-10 * time.Second)}, want: true},
		{name: "a pod that failed is read once more", pod: PodState{Phase: PodFailed}, seen: AgentSeen{At: t0}, want: true},
		{name: "and then not again", pod: PodState{Phase: PodFailed}, seen: AgentSeen{At: t0, Final: true}},
		{name: "a pod being deleted is read once more", pod: PodState{Phase: PodGone, TerminatingUntil: t0.Add(time.Minute)},
			seen: AgentSeen{At: t0}, want: true},
		{name: "a pod that is gone is not read", pod: PodState{Phase: PodGone}},
		{name: "a pod that succeeded hands back its transcript instead", pod: PodState{Phase: PodSucceeded}},
	} {
		if got := AgentLogDue(c.pod, c.seen, t0, 10*time.Second); got != c.want {
			t.Errorf("%s: due = %v, want %v", c.name, got, c.want)
		}
	}
}

// agentFacts are the facts of a Run whose agent step "deploy" (elicitStep) runs pod p.
func agentFacts(t *testing.T, a AgentPodFacts) (*Facts, *Plan) {
	t.Helper()
	step := elicitStep(t)
	scene := &compile.Scene{Steps: map[string]*compile.Step{"deploy": step}}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r1"}}
	a.Step = "deploy"
	if a.Pod.Name == "" {
		a.Pod = PodState{Name: "r1-deploy-1", UID: "pod-uid", Attempt: 1, Phase: PodRunning}
	}
	f := &Facts{Now: t0, Run: run, Scene: scene, Agents: []AgentPodFacts{a}, Gates: map[string]GateState{},
		Conflicts: map[string]string{}, ProgressInterval: 10 * time.Second}
	p := &Plan{Status: ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{
		{Name: "deploy", Phase: ergonv1alpha1.StepRunning, CheckpointSHA256: "old"}}}}
	return f, p
}

func TestObserveAgentsProgressAndCheckpoints(t *testing.T) {
	checkpoint := func(sum string) *wire.Progress {
		return &wire.Progress{Turn: 2, TotalTokens: 30, Checkpoint: &wire.Part{SHA256: sum}}
	}
	for _, c := range []struct {
		name string
		a    AgentPodFacts
		// digest is what the step's status records afterwards; write the checkpoint written
		// ("-" none); events the reasons told.
		digest, write string
		events        []string
	}{
		{name: "a log not due changes nothing", a: AgentPodFacts{Seen: AgentSeen{Checkpoint: "old"}}, digest: "old", write: "-"},
		{name: "a new checkpoint is kept in a new ConfigMap and recorded",
			a: AgentPodFacts{Read: true, Progress: checkpoint("new"),
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Content: []byte("conversation")}},
			digest: "new", write: "conversation"},
		{name: "a checkpoint its ConfigMap holds already is recorded, not written",
			a: AgentPodFacts{Read: true, Progress: checkpoint("new"),
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Exists: true, Holds: true}},
			digest: "new", write: "-"},
		{name: "a reset empties the ConfigMap and records no checkpoint",
			a: AgentPodFacts{Read: true, Progress: &wire.Progress{Turn: 1, Reset: true},
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Exists: true}},
			digest: "", write: ""},
		{name: "a reset with no ConfigMap writes nothing",
			a:      AgentPodFacts{Read: true, Progress: &wire.Progress{Turn: 1, Reset: true}, Checkpoint: &CheckpointFacts{ConfigMap: "cm"}},
			digest: "", write: "-"},
		{name: "someone else's ConfigMap under the name is told once and left alone",
			a: AgentPodFacts{Read: true, Progress: checkpoint("new"),
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Exists: true, Conflict: "not the Run's"}},
			digest: "old", write: "-", events: []string{ergonv1alpha1.ReasonNameConflict}},
		{name: "and not told again",
			a: AgentPodFacts{Read: true, Progress: checkpoint("new"), Seen: AgentSeen{Conflict: true},
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Exists: true, Conflict: "not the Run's"}},
			digest: "old", write: "-"},
		{name: "a log that cannot be read keeps what was kept",
			a: AgentPodFacts{Read: true, ReadErr: "no log"}, digest: "old", write: "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, p := agentFacts(t, c.a)
			ObserveAgents(f, p)
			if got := p.Status.Steps[0].CheckpointSHA256; got != c.digest {
				t.Errorf("status records %q, want %q", got, c.digest)
			}
			switch {
			case c.write == "-" && len(p.KeepCheckpoints) > 0:
				t.Errorf("writes %+v, want none", p.KeepCheckpoints)
			case c.write != "-" && (len(p.KeepCheckpoints) != 1 || string(p.KeepCheckpoints[0].Content) != c.write ||
				p.KeepCheckpoints[0].SHA256 != c.digest || p.KeepCheckpoints[0].Previous != "old"):
				t.Errorf("writes %+v, want %q recorded as %q", p.KeepCheckpoints, c.write, c.digest)
			}
			if noted, ok := p.NoteCheckpoints["deploy"]; ok != (c.digest != "old") || noted != p.Status.Steps[0].CheckpointSHA256 && ok {
				t.Errorf("noted %v, want the digest recorded when it changed", p.NoteCheckpoints)
			}
			var reasons []string
			for _, e := range p.Events {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(reasons, c.events) {
				t.Errorf("events %v, want %v", reasons, c.events)
			}
			if p.RequeueAfter != 10*time.Second {
				t.Errorf("requeue after %s, want the progress interval", p.RequeueAfter)
			}
			if seen := p.AgentsSeen["pod-uid"]; c.a.Read && (!seen.At.Equal(t0) || seen.Checkpoint != p.Status.Steps[0].CheckpointSHA256 && c.digest != "old") {
				t.Errorf("seen %+v", seen)
			}
			if c.a.Progress != nil && (p.Status.Steps[0].Usage == nil || int(p.Status.Steps[0].Usage.Turns) != c.a.Progress.Turn) {
				t.Errorf("usage %+v, want the progress line's", p.Status.Steps[0].Usage)
			}
		})
	}
	t.Run("a refused write records what was recorded before", func(t *testing.T) {
		f, p := agentFacts(t, AgentPodFacts{Read: true, Progress: checkpoint("new"),
			Checkpoint: &CheckpointFacts{ConfigMap: "cm", Content: []byte("conversation")}})
		ObserveAgents(f, p)
		p.KeepLost(p.KeepCheckpoints[0])
		if got := p.Status.Steps[0].CheckpointSHA256; got != "old" || len(p.NoteCheckpoints) != 0 {
			t.Fatalf("status records %q, noted %v; want old, nothing", got, p.NoteCheckpoints)
		}
	})
	t.Run("digests kept by earlier passes whose status was lost are recorded", func(t *testing.T) {
		f, p := agentFacts(t, AgentPodFacts{})
		f.NotedCheckpoints = map[string]string{"deploy": "kept"}
		ObserveAgents(f, p)
		if got := p.Status.Steps[0].CheckpointSHA256; got != "kept" {
			t.Fatalf("status records %q, want kept", got)
		}
	})
	t.Run("an older progress line does not lower the usage shown", func(t *testing.T) {
		f, p := agentFacts(t, AgentPodFacts{Read: true, Progress: &wire.Progress{Turn: 2}})
		p.Status.Steps[0].Usage = &ergonv1alpha1.AgentUsage{Turns: 5}
		ObserveAgents(f, p)
		if p.Status.Steps[0].Usage.Turns != 5 {
			t.Fatalf("usage %+v, want turn 5 kept", p.Status.Steps[0].Usage)
		}
	})
}

func TestTheLastReadOfAPodThatEndedIsAwaited(t *testing.T) {
	ended := PodState{Name: "r1-deploy-1", UID: "pod-uid", Attempt: 1, Phase: PodFailed}
	f, p := agentFacts(t, AgentPodFacts{Pod: ended, Read: true, ReadErr: "no log yet"})
	p.CleanupPods = []string{"r1-deploy-1", "other"}
	ObserveAgents(f, p)
	seen := p.AgentsSeen["pod-uid"]
	if !slices.Equal(p.CleanupPods, []string{"other"}) || p.RequeueAfter != LastReadRetry || seen.Final || !seen.UnreadSince.Equal(t0) {
		t.Fatalf("cleanup %v, requeue %s, seen %+v; want the pod kept, read again in %s", p.CleanupPods, p.RequeueAfter, seen, LastReadRetry)
	}
	// Past the patience, the pod goes, and the lost checkpoint is told.
	f, p = agentFacts(t, AgentPodFacts{Pod: ended, Read: true, ReadErr: "no log yet", Seen: seen})
	f.Now = t0.Add(LastReadPatience)
	p.CleanupPods = []string{"r1-deploy-1"}
	ObserveAgents(f, p)
	if len(p.CleanupPods) != 1 || p.RequeueAfter != 0 || !p.AgentsSeen["pod-uid"].Final ||
		len(p.Events) != 1 || p.Events[0].Reason != "CheckpointLost" {
		t.Fatalf("cleanup %v, requeue %s, events %+v; want the pod given up, and told", p.CleanupPods, p.RequeueAfter, p.Events)
	}
}

func TestTheCheckpointOfAHandoverIsAwaited(t *testing.T) {
	handed := PodState{Name: "r1-deploy-1", UID: "pod-uid", Attempt: 2, Phase: PodFailed, Reason: agentspec.ReasonToolCallsPending}
	pending := func(attempt int32) []byte {
		b, _ := json.Marshal(map[string]any{"pending": agentspec.Pending{Attempt: attempt}})
		return b
	}
	earlier := &wire.Progress{Turn: 1, Checkpoint: &wire.Part{SHA256: "turn1"}}
	last := &wire.Progress{Turn: 2, Checkpoint: &wire.Part{SHA256: "handover"}}
	for _, c := range []struct {
		name string
		a    AgentPodFacts
		// gathered is the attempt whose calls the checkpoint gather read lists; 0 none.
		gathered int32
		awaited  bool
	}{
		{name: "a log with no progress line yet", a: AgentPodFacts{Pod: handed, Read: true}, awaited: true},
		{name: "a log whose end is not in yet: an earlier turn's checkpoint", awaited: true,
			a: AgentPodFacts{Pod: handed, Read: true, Progress: earlier,
				Checkpoint: &CheckpointFacts{ConfigMap: "cm", Content: []byte(`{"turn":1}`)}}},
		{name: "a checkpoint that lists an earlier attempt's calls", awaited: true,
			a: AgentPodFacts{Pod: handed, Read: true, Progress: last, Checkpoint: &CheckpointFacts{ConfigMap: "cm", Content: pending(1)}}},
		{name: "the checkpoint that lists the attempt's calls, read now",
			a: AgentPodFacts{Pod: handed, Read: true, Progress: last, Checkpoint: &CheckpointFacts{ConfigMap: "cm", Content: pending(2)}}},
		{name: "the checkpoint kept by an earlier read, while the pod ran", gathered: 2,
			a: AgentPodFacts{Pod: handed, Read: true, Progress: last, Seen: AgentSeen{Checkpoint: "handover"}}},
		{name: "a pod that failed otherwise is read once",
			a: AgentPodFacts{Pod: PodState{Name: "r1-deploy-1", UID: "pod-uid", Attempt: 2, Phase: PodFailed}, Read: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, p := agentFacts(t, c.a)
			if c.gathered > 0 {
				f.ToolCalls = map[string]ToolCallFacts{"deploy": {Pending: &agentspec.Pending{Attempt: c.gathered}}}
			}
			p.CleanupPods = []string{"r1-deploy-1"}
			ObserveAgents(f, p)
			seen := p.AgentsSeen["pod-uid"]
			if awaited := !seen.Final && len(p.CleanupPods) == 0 && p.RequeueAfter == LastReadRetry; awaited != c.awaited {
				t.Fatalf("seen %+v, cleanup %v, requeue %s: awaited %v, want %v", seen, p.CleanupPods, p.RequeueAfter, awaited, c.awaited)
			}
			if c.awaited {
				// Past the patience, the wait ends and says why: the step's own timer then fails it.
				f, p = agentFacts(t, AgentPodFacts{Pod: handed, Read: true, Seen: seen})
				f.Now = t0.Add(LastReadPatience)
				ObserveAgents(f, p)
				if !p.AgentsSeen["pod-uid"].Final || len(p.Events) != 1 || !strings.Contains(p.Events[0].Message, "handed over") {
					t.Fatalf("seen %+v, events %+v; want the read given up, and told", p.AgentsSeen["pod-uid"], p.Events)
				}
			}
		})
	}
}

func TestAQuestionOpensItsGateAndItsAnswerIsHandedBackOnce(t *testing.T) {
	ask := agentspec.Ask{ID: "e1", Server: askingURL, Message: "Which region?", Schema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string"}}}`)}
	asking := AgentPodFacts{Read: true, Progress: &wire.Progress{Turn: 1, Asks: []agentspec.Ask{ask}}}
	f, p := agentFacts(t, asking)
	ObserveAgents(f, p)
	gate := naming.ToolCallName("r1", "deploy", RequestElicit+"/1/e1")
	if len(p.Gates) != 1 || p.Gates[0].Name != gate || len(p.Answers) != 0 {
		t.Fatalf("gates %+v, answers %+v; want the question's Gate", p.Gates, p.Answers)
	}
	// Decided while the log is not due: the answer goes back, once.
	seen := p.AgentsSeen["pod-uid"]
	f, p = agentFacts(t, AgentPodFacts{Seen: seen})
	f.Gates[gate] = GateState{Decided: true, Option: optionReject, DecidedBy: "alice"}
	ObserveAgents(f, p)
	if len(p.Gates) != 0 || len(p.Answers) != 1 || p.Answers[0].UID != "pod-uid" ||
		p.Answers[0].Answers["e1"].Action != agentspec.AnswerDecline {
		t.Fatalf("gates %+v, answers %+v; want alice's decline", p.Gates, p.Answers)
	}
	f, p = agentFacts(t, AgentPodFacts{Seen: p.AgentsSeen["pod-uid"]})
	f.Gates[gate] = GateState{Decided: true, Option: optionReject, DecidedBy: "alice"}
	ObserveAgents(f, p)
	if len(p.Answers) != 0 {
		t.Fatalf("answers %+v, want none: the pod has them", p.Answers)
	}
	// A question that cannot be put to people is cancelled at once.
	bad := ask
	bad.Server = "http://evil/mcp"
	f, p = agentFacts(t, AgentPodFacts{Read: true, Progress: &wire.Progress{Turn: 1, Asks: []agentspec.Ask{bad}}})
	ObserveAgents(f, p)
	if len(p.Gates) != 0 || len(p.Answers) != 1 || p.Answers[0].Answers["e1"].Action != agentspec.AnswerCancel {
		t.Fatalf("gates %+v, answers %+v; want a cancel", p.Gates, p.Answers)
	}
}
