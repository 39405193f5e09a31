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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/template"
)

// The life of one unit: start it, follow its pod or child Run, then retry it, fail it, end
// it, or (in a loop) start its next iteration.

// adopt takes over a unit's pod or child Run that exists although the status says the unit
// has not started: the status write after its creation was lost. It reports whether it did.
func (f *flow) adopt(i int) bool {
	p, u := f.p, f.u
	un := u.unit(i)
	if f.step.Spec.Scene != nil {
		name := naming.UnitChildRunName(p.f.Run.Name, f.s.Name, un.Index, un.Iteration)
		if _, ok := p.f.Children[name]; !ok {
			return false
		}
		u.attempts[i] = 1
		if !u.fan {
			f.s.ChildRun = name
		}
	} else {
		latest := latestPod(p.f.UnitPods[f.s.Name][un])
		if latest == nil || latest.Attempt <= u.attempts[i] {
			return false
		}
		u.attempts[i] = latest.Attempt
		if !u.fan {
			f.s.PodName = latest.Name
		}
	}
	u.states[i] = ergonv1alpha1.InstanceRunning
	p.active++
	return true
}

// follow mirrors the pod or child Run of a running unit.
func (f *flow) follow(i int) {
	p, u := f.p, f.u
	un := u.unit(i)
	if f.step.Spec.Scene != nil {
		name := naming.UnitChildRunName(p.f.Run.Name, f.s.Name, un.Index, un.Iteration)
		child, ok := p.f.Children[name]
		if !ok {
			return // created, not observed yet
		}
		switch child.Phase {
		case ergonv1alpha1.RunSucceeded:
			p.active--
			f.succeeded(i, child.Value)
		case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
			p.active--
			f.failed(i, ergonv1alpha1.ReasonChildRunFailed, fmt.Sprintf("child Run %s ended %s: %s", name, child.Phase, child.Message))
		}
		return
	}
	var pod *PodState
	for _, ps := range p.f.UnitPods[f.s.Name][un] {
		if ps.Attempt >= u.attempts[i] && (pod == nil || ps.Attempt > pod.Attempt) {
			pod = &ps
		}
	}
	if pod == nil {
		return // created, not observed yet: the controller reports a pod that is gone as Gone
	}
	u.attempts[i] = pod.Attempt
	if !u.fan {
		f.s.PodName = pod.Name
		if pod.Phase == PodRunning {
			p.start(f.s)
		}
	}
	switch pod.Phase {
	case PodSucceeded:
		out, collected := p.f.Outputs[pod.Name]
		if !collected {
			return
		}
		p.active--
		if out.Err != "" {
			reason := ergonv1alpha1.ReasonOutputError
			if out.Reason != "" {
				reason = out.Reason
			}
			f.attemptFailed(i, reason, out.Err)
			return
		}
		f.succeeded(i, out.Value)
	case PodFailed, PodGone:
		p.active--
		reason, message := ergonv1alpha1.ReasonStepFailed, pod.Message
		switch {
		case pod.Reason == "DeadlineExceeded":
			reason, message = ergonv1alpha1.ReasonStepTimedOut, "the attempt ran past its timeout"
		case pod.Reason != "":
			reason = pod.Reason
		}
		if message == "" && pod.ExitCode != nil {
			message = fmt.Sprintf("the command exited with code %d", *pod.ExitCode)
		}
		f.attemptFailed(i, reason, message)
	}
}

// attemptFailed retries a unit's pod at once while the step's retry allows, and fails the
// unit otherwise.
func (f *flow) attemptFailed(i int, reason, message string) {
	if r := f.step.Spec.Retry; r != nil && f.u.attempts[i] <= r.Limit {
		f.u.states[i] = ergonv1alpha1.InstanceNotStarted
		f.clearCurrent()
		return
	}
	if r := f.step.Spec.Retry; r != nil {
		message = fmt.Sprintf("%s (attempt %d of %d)", message, f.u.attempts[i], r.Limit+1)
	}
	f.failed(i, reason, message)
}

func (f *flow) clearCurrent() {
	if !f.u.fan {
		f.s.PodName, f.s.ChildRun = "", ""
	}
}

// failed ends a unit Failed. A plain loop's step fails with it; a fan-out starts no more
// instances and fails once the running ones end.
func (f *flow) failed(i int, reason, message string) {
	u := f.u
	u.states[i] = ergonv1alpha1.InstanceFailed
	if !u.fan {
		u.save(f.step.Spec.Retry != nil)
		f.p.fail(f.s, f.step, reason, fmt.Sprintf("iteration %d: %s", u.iterations[i], message))
		return
	}
	if in := f.s.Instances; len(in.Failures) < 10 {
		in.Failures = append(in.Failures, ergonv1alpha1.InstanceFailure{Index: int32(i), Reason: reason, Message: truncate(message, 512)})
	}
}

// succeeded ends a unit's pod or child Run with its output: the unit succeeded, or its loop
// goes on.
func (f *flow) succeeded(i int, value string) {
	p, u := f.p, f.u
	un := u.unit(i)
	cm := u.valueConfigMap(p.f.Run.Name, f.s.Name, i)
	f.clearCurrent()
	if reason, message := p.keep(f.s, "the output of "+f.unitNoun(i), StoreRequest{ConfigMap: cm, Step: f.s.Name, Value: value}); reason != "" {
		f.failed(i, reason, message)
		return
	}
	if !u.loop {
		u.states[i], f.held[i] = ergonv1alpha1.InstanceSucceeded, value
		return
	}
	if !u.fan {
		sum := sha256.Sum256([]byte(value))
		f.s.Loop.Iterations = append(f.s.Loop.Iterations, ergonv1alpha1.IterationStatus{
			Iteration: un.Iteration, Size: int64(len(value)), SHA256: hex.EncodeToString(sum[:]), ConfigMap: cm, FinishedAt: &p.now})
	}
	done, err := f.step.Until.EvalUntil(p.exprVars(), expr.Iteration{
		Output: value, Outputs: jsonValue(value), Item: f.item(i),
		Iteration: int64(un.Iteration), Previous: f.previous(i),
	})
	loop := f.step.Spec.Loop
	switch {
	case err != nil:
		f.failed(i, ergonv1alpha1.ReasonUntilError, err.Error())
	case done:
		u.states[i], f.held[i] = ergonv1alpha1.InstanceSucceeded, value
	case un.Iteration < loop.MaxIterations:
		u.iterations[i]++
		u.attempts[i] = 0
		u.states[i] = ergonv1alpha1.InstanceNotStarted
		f.prev[i] = value
	case loop.OnExhausted == ergonv1alpha1.LoopExhaustedSucceed:
		u.states[i], f.held[i] = ergonv1alpha1.InstanceSucceeded, value
		if !u.fan {
			f.s.Reason, f.s.Message = ergonv1alpha1.ReasonExhausted, fmt.Sprintf("until was still false after %d iterations; onExhausted is succeed", un.Iteration)
		}
	default:
		f.failed(i, ergonv1alpha1.ReasonMaxIterationsExceeded, fmt.Sprintf(
			"until %q was still false after %d iterations (maxIterations); raise maxIterations or set onExhausted: succeed",
			loop.Until, un.Iteration))
	}
}

// previous is the output of unit i's previous iteration, "" in the first; ok is false when it
// has not been read yet.
func (f *flow) previousValue(i int) (string, bool) {
	un := f.u.unit(i)
	if un.Iteration <= 1 {
		return "", true
	}
	if v, ok := f.prev[i]; ok {
		return v, true
	}
	v, ok := f.p.f.Stored[naming.UnitOutputConfigMapName(f.p.f.Run.Name, f.s.Name, un.Index, un.Iteration-1)]
	return v, ok
}

// unitNoun names unit i for messages: "instance 3", "iteration 2", "instance 3, iteration 2".
func (f *flow) unitNoun(i int) string {
	un := f.u.unit(i)
	switch {
	case f.u.fan && f.u.loop:
		return fmt.Sprintf("instance %d, iteration %d", un.Index, un.Iteration)
	case f.u.fan:
		return fmt.Sprintf("instance %d", un.Index)
	}
	return fmt.Sprintf("iteration %d", un.Iteration)
}

// lost says why the kept output in ConfigMap name can never be read, as a reason and message;
// "" while it may still be (it is read before the next pass). The output was kept before the
// status recorded it, so a ConfigMap that is gone was deleted, and waiting would be forever.
func (f *flow) lost(name, what string) (reason, message string) {
	if msg, ok := f.p.f.Conflicts[name]; ok {
		return ergonv1alpha1.ReasonNameConflict, fmt.Sprintf("%s cannot be read: %s", what, msg)
	}
	if f.p.f.Missing[name] {
		return ergonv1alpha1.ReasonOutputError, fmt.Sprintf("ConfigMap %s, which kept %s, was deleted", name, what)
	}
	return "", ""
}

func (f *flow) previous(i int) string {
	v, _ := f.previousValue(i)
	return v
}

func (f *flow) item(i int) any {
	if !f.u.fan {
		return nil
	}
	items, err := f.list()
	if err != nil || i >= len(items) {
		return nil
	}
	return items[i]
}

// startUnit asks for the pod or child Run of unit i. It reports whether it did.
func (f *flow) startUnit(i int) bool {
	p, u, step := f.p, f.u, f.step
	un := u.unit(i)
	prev, ok := f.previousValue(i)
	if !ok {
		name := naming.UnitOutputConfigMapName(p.f.Run.Name, f.s.Name, un.Index, un.Iteration-1)
		if reason, message := f.lost(name, "the previous iteration's output"); reason != "" {
			f.failed(i, reason, message)
		}
		return false // read before the next pass
	}
	data := p.templateData()
	d := make(map[string]any, len(data)+2)
	maps.Copy(d, data)
	if u.fan {
		if _, err := f.list(); err != nil {
			f.failed(i, ergonv1alpha1.ReasonForEachError, err.Error())
			return false
		}
		d[template.KindItem] = template.Value(f.item(i))
	}
	if u.loop {
		prevOutputs := template.Value(jsonValue(prev))
		if prevOutputs == nil {
			prevOutputs = map[string]any{}
		}
		d[template.KindLoop] = map[string]any{"iteration": int64(un.Iteration), "previous": prev, "previousOutputs": prevOutputs}
	}
	r, err := step.Render(d)
	if err != nil {
		f.failed(i, ergonv1alpha1.ReasonTemplateError, err.Error())
		return false
	}
	if n := len(r.AgentSystem) + len(r.AgentPrompt); n > MaxAgentPrompt {
		f.failed(i, ergonv1alpha1.ReasonTemplateError, fmt.Sprintf("the rendered system prompt and prompt are %d bytes; at most %d fit in the step's pod", n, MaxAgentPrompt))
		return false
	}
	if problem := renderedProblem(r); problem != "" {
		f.failed(i, ergonv1alpha1.ReasonRenderedTooLarge, problem)
		return false
	}
	if problem := f.unitAllowed(i); problem != "" {
		f.failed(i, ergonv1alpha1.ReasonUnitLimitReached, problem)
		return false
	}
	if step.Spec.Scene != nil {
		name := naming.UnitChildRunName(p.f.Run.Name, step.Name, un.Index, un.Iteration)
		if _, exists := p.f.Children[name]; !exists {
			if refusal := p.refuseChild(); refusal != nil {
				f.failed(i, refusal.Reason, refusal.Message)
				return false
			}
		}
	}
	if u.attempts[i] == 0 && f.made >= 0 {
		f.made++
	}
	p.take()
	u.states[i] = ergonv1alpha1.InstanceRunning
	u.attempts[i]++
	if step.Spec.Scene != nil {
		name := naming.UnitChildRunName(p.f.Run.Name, step.Name, un.Index, un.Iteration)
		if _, exists := p.f.Children[name]; !exists {
			p.plan.Children = append(p.plan.Children, ChildRequest{Name: name, Step: step.Name, Scene: string(step.Spec.Scene.Name), Params: r.SceneParams})
		}
		if !u.fan {
			f.s.ChildRun = name
		}
		return true
	}
	name := naming.UnitPodName(p.f.Run.Name, step.Name, un.Index, un.Iteration, u.attempts[i])
	p.plan.Pods = append(p.plan.Pods, PodRequest{Name: name, Step: step, Attempt: u.attempts[i], Rendered: r,
		Inputs: p.inputs(step), Unit: &un})
	if !u.fan {
		f.s.PodName = name
	}
	return true
}

// jsonValue parses an output that is JSON, nil otherwise.
func jsonValue(value string) any {
	var v any
	if len(value) == 0 || json.Unmarshal([]byte(value), &v) != nil {
		return nil
	}
	return v
}
