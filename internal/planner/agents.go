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
	"fmt"
	"slices"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// What a running agent step says in its log: its progress, which becomes the step's usage so
// far; its last checkpoint, which is kept in the step's checkpoint ConfigMap for the next
// attempt; and the questions its MCP servers ask (elicit.go). A running pod's log is read at
// most once per progress interval (AgentLogDue); a pod that ended or is being deleted (still
// readable during its grace period) is read once more, so a killed pod costs at most the turn
// it was in. Gather reads the logs that are due, after Decide; ObserveAgents decides what
// they change.

const (
	// DefaultProgressInterval is how often a running agent step's log is read.
	DefaultProgressInterval = 10 * time.Second
	// LastReadRetry is how soon the log of a pod that ended is read again after a failed
	// read, and LastReadPatience how long: its last checkpoint may list the tool calls the
	// step waits for, or let the next attempt resume, so the pod is kept until it is read.
	LastReadRetry    = 2 * time.Second
	LastReadPatience = time.Minute
)

// AgentSeen is what the controller last read of an agent pod's log.
type AgentSeen struct {
	At    time.Time
	Final bool
	// Checkpoint is the digest of the last checkpoint kept, so that an unchanged one costs no
	// read of its ConfigMap.
	Checkpoint string
	// UnreadSince is when the read of the log of a pod that ended first failed; zero while no
	// such read failed.
	UnreadSince time.Time
	// Conflict is set once a ConfigMap that is not the Run's was found under the checkpoint's
	// name, and told in an Event.
	Conflict bool
	// Asks are the questions the pod's last progress line says it waits on, and Answered the
	// answers last handed to it (unsigned, as JSON).
	Asks     []agentspec.Ask
	Answered string
}

// AgentPodFacts is what gather knows of a running or ended agent pod.
type AgentPodFacts struct {
	Step string
	Pod  PodState
	// Seen is what was read of the pod's log before this pass.
	Seen AgentSeen
	// Read says the log was due (AgentLogDue) and read in this pass; ReadErr why that failed.
	Read     bool
	ReadErr  string
	Progress *wire.Progress
	// Checkpoint is the step's checkpoint ConfigMap, read when the progress line names a
	// checkpoint other than Seen's, or a reset.
	Checkpoint *CheckpointFacts
}

// CheckpointFacts is a step's checkpoint ConfigMap, and the checkpoint to keep in it.
type CheckpointFacts struct {
	ConfigMap string
	// UID is the ConfigMap's, when it exists: the write is an update of that very one.
	UID string
	// Content is the checkpoint the log holds; nil for a reset, or when Holds.
	Content []byte
	// Exists says the ConfigMap is there; Holds that it holds the checkpoint already;
	// Conflict why it is not the Run's.
	Exists          bool
	ResourceVersion string
	Holds           bool
	Conflict        string
}

// CheckpointWrite keeps a step's checkpoint: Content (empty for a reset), in a new ConfigMap
// (no ResourceVersion) or over the one gather read; SHA256 is the digest the step's status
// records from now on; Previous is the digest it recorded before, which it
// records again when the write is refused (KeepLost).
type CheckpointWrite struct {
	Step, ConfigMap  string
	UID              string
	Content          []byte
	ResourceVersion  string
	SHA256, Previous string
}

// AnswerRequest hands the answers to its questions to a waiting agent pod, by question id;
// the controller signs each for the pod's UID.
type AnswerRequest struct {
	Pod, UID string
	Answers  map[string]agentspec.Answer
}

// AgentLogDue says whether an agent pod's log is read in this pass: a running pod's once per
// interval, a pod that ended once more.
func AgentLogDue(p PodState, seen AgentSeen, now time.Time, interval time.Duration) bool {
	running, final := agentPodState(p)
	if !running && !final {
		return false
	}
	return !seen.Final && (!running || now.Sub(seen.At) >= progressInterval(interval))
}

// progressInterval is the manager's progress interval, DefaultProgressInterval when unset.
func progressInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultProgressInterval
	}
	return d
}

// agentPodState says whether an agent pod runs, or ended in a way whose log is read once more
// (it failed, or is being deleted).
func agentPodState(p PodState) (running, final bool) {
	return p.Phase == PodRunning, p.Phase == PodFailed || (p.Phase == PodGone && !p.TerminatingUntil.IsZero())
}

// ObserveAgents decides what the agent pods' logs gather read change: the steps' usage so far,
// the checkpoints to keep and the digests their status records, the Gates of the pods'
// questions and the answers to hand back, how long a pod that ended is kept for its last read,
// and when to look again. It runs after Decide, on the plan Decide made.
func ObserveAgents(f *Facts, p *Plan) {
	interval := progressInterval(f.ProgressInterval)
	for i := range p.Status.Steps {
		if sum, ok := f.NotedCheckpoints[p.Status.Steps[i].Name]; ok {
			p.Status.Steps[i].CheckpointSHA256 = sum
		}
	}
	for i := range f.Agents {
		observeAgent(f, p, &f.Agents[i], interval)
	}
}

// observeAgent decides what one agent pod's log changes.
func observeAgent(f *Facts, p *Plan, a *AgentPodFacts, interval time.Duration) {
	running, final := agentPodState(a.Pod)
	if !running && !final {
		return
	}
	if running {
		p.RequeueAfter = sooner(p.RequeueAfter, interval)
	}
	if p.AgentsSeen == nil {
		p.AgentsSeen = map[string]AgentSeen{}
	}
	last := a.Seen
	if !a.Read {
		if running && len(last.Asks) > 0 {
			// A question's Gate may have been decided since the log was read.
			answerAsks(f, p, a, &last)
		}
		p.AgentsSeen[a.Pod.UID] = last
		return
	}
	next := AgentSeen{At: f.Now, Final: final, Checkpoint: last.Checkpoint, Asks: last.Asks, Answered: last.Answered,
		Conflict: last.Conflict}
	failed := a.ReadErr
	if a.Progress != nil {
		next.Asks = a.Progress.Asks
	}
	if prog := a.Progress; failed == "" && prog != nil {
		if cf := a.Checkpoint; cf != nil && cf.Conflict != "" {
			failed = cf.Conflict
			if !last.Conflict {
				next.Conflict = true
				p.Events = append(p.Events, Event{Warning: true, Reason: ergonv1alpha1.ReasonNameConflict, Action: "KeepCheckpoint",
					Message: fmt.Sprintf("Step %s cannot keep its checkpoint: %s", a.Step, cf.Conflict)})
			}
		} else if cf != nil {
			next.Checkpoint = keepCheckpoint(p, a.Step, prog, cf)
		}
	}
	if final && failed == "" && a.Pod.Reason == agentspec.ReasonToolCallsPending && !handoverRead(f, a) {
		// The pod handed tool calls over, so its log ends with the checkpoint that lists
		// them; a log without it is not all in yet (a container runtime may write a log's
		// last lines after it reports the container ended), and the step waits on it.
		failed = "its log does not show yet the checkpoint that lists the tool calls it handed over"
	}
	switch {
	case failed == "" || !final:
	case last.UnreadSince.IsZero() || f.Now.Sub(last.UnreadSince) < LastReadPatience:
		// The pod is kept until its last read: its checkpoint may hold the tool calls its
		// step waits for.
		next.Final, next.UnreadSince = false, last.UnreadSince
		if next.UnreadSince.IsZero() {
			next.UnreadSince = f.Now
		}
		p.CleanupPods = slices.DeleteFunc(p.CleanupPods, func(name string) bool { return name == a.Pod.Name })
		p.RequeueAfter = sooner(p.RequeueAfter, LastReadRetry)
	default:
		p.Events = append(p.Events, Event{Warning: true, Reason: "CheckpointLost", Action: "ReadProgress",
			Message: fmt.Sprintf("Step %s: the log of pod %s, which ended, could not be read for %s, so its last checkpoint is lost: %s",
				a.Step, a.Pod.Name, LastReadPatience, failed)})
	}
	if running && len(next.Asks) > 0 {
		answerAsks(f, p, a, &next)
	}
	p.AgentsSeen[a.Pod.UID] = next
	if a.Progress != nil {
		showProgress(&p.Status, a.Step, a.Progress)
	}
}

// handoverRead says whether the checkpoint that lists the tool calls an agent pod handed over
// has been read: the one gather found for its step, or the one this read keeps.
func handoverRead(f *Facts, a *AgentPodFacts) bool {
	pending := f.ToolCalls[a.Step].Pending
	if cf := a.Checkpoint; cf != nil && len(cf.Content) > 0 {
		pending = agentspec.PendingOf(cf.Content)
	}
	return pending != nil && pending.Attempt == a.Pod.Attempt
}

// keepCheckpoint plans the write of the checkpoint a progress line names (or its reset) into
// the step's ConfigMap, records its digest in the step's status, and returns it.
func keepCheckpoint(p *Plan, step string, prog *wire.Progress, cf *CheckpointFacts) string {
	sum := ""
	if !prog.Reset {
		sum = prog.Checkpoint.SHA256
	}
	previous := ""
	for i := range p.Status.Steps {
		if s := &p.Status.Steps[i]; s.Name == step {
			previous, s.CheckpointSHA256 = s.CheckpointSHA256, sum
		}
	}
	if p.NoteCheckpoints == nil {
		p.NoteCheckpoints = map[string]string{}
	}
	p.NoteCheckpoints[step] = sum
	if cf.Holds || (prog.Reset && !cf.Exists) {
		return sum // kept by an earlier pass, or nothing to reset
	}
	content := cf.Content
	if prog.Reset {
		content = []byte{}
	}
	p.KeepCheckpoints = append(p.KeepCheckpoints, CheckpointWrite{Step: step, ConfigMap: cf.ConfigMap, Content: content,
		UID: cf.UID, ResourceVersion: cf.ResourceVersion, SHA256: sum, Previous: previous})
	return sum
}

// KeepLost undoes what a checkpoint write the API server refused for good would have recorded:
// the step's status records the digest it recorded before, and nothing is noted.
func (p *Plan) KeepLost(w CheckpointWrite) {
	for i := range p.Status.Steps {
		if s := &p.Status.Steps[i]; s.Name == w.Step && s.CheckpointSHA256 == w.SHA256 {
			s.CheckpointSHA256 = w.Previous
		}
	}
	delete(p.NoteCheckpoints, w.Step)
}

// answerAsks opens the Gates of a running pod's questions and hands back the answers of those
// decided. A question the controller cannot put to people is answered at once with cancel,
// saying why, so that the pod does not wait for nothing.
func answerAsks(f *Facts, p *Plan, a *AgentPodFacts, seen *AgentSeen) {
	step := f.Scene.Steps[a.Step]
	answers := map[string]agentspec.Answer{}
	for _, ask := range seen.Asks {
		req, err := ElicitGate(f.Run.Name, step, a.Pod.Attempt, ask)
		if err != nil {
			answers[ask.ID] = agentspec.Answer{Action: agentspec.AnswerCancel,
				Why: "Ergon cannot put the question to people: " + err.Error()}
			continue
		}
		if conflict, held := f.Conflicts[req.Name]; held {
			answers[ask.ID] = agentspec.Answer{Action: agentspec.AnswerCancel,
				Why: "Ergon cannot open the question's Gate: " + conflict}
			continue
		}
		gate, ok := f.Gates[req.Name]
		if !ok {
			p.Gates = append(p.Gates, req)
			continue
		}
		if answer, ok := ElicitAnswer(req.Tool, gate); ok {
			answers[ask.ID] = answer
		}
	}
	if len(answers) == 0 {
		return
	}
	b, _ := json.Marshal(answers) // plain data
	if string(b) == seen.Answered {
		return
	}
	p.Answers = append(p.Answers, AnswerRequest{Pod: a.Pod.Name, UID: a.Pod.UID, Answers: answers})
	seen.Answered = string(b)
}

// showProgress puts an agent step's progress into its status while it runs: the turns and
// tokens so far, over its attempts.
func showProgress(status *ergonv1alpha1.RunStatus, step string, prog *wire.Progress) {
	for i := range status.Steps {
		s := &status.Steps[i]
		if s.Name != step || s.Phase.Finished() {
			continue
		}
		if s.Usage != nil && int(s.Usage.Turns) > prog.Turn {
			return // an older line than the one shown
		}
		s.Usage = &ergonv1alpha1.AgentUsage{Turns: int32(prog.Turn), PromptTokens: prog.PromptTokens,
			CompletionTokens: prog.CompletionTokens, TotalTokens: prog.TotalTokens, Cost: prog.Cost}
	}
}
