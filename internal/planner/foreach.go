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
	"strings"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// flow is one planning pass over a fan-out or looping step.
type flow struct {
	p    *planner
	step *compile.Step
	s    *ergonv1alpha1.StepStatus
	u    *units
	// held are unit outputs collected this pass, by unit index; prev the previous iteration's
	// output of units that start a new iteration this pass.
	held, prev map[int]string
	items      []any
	itemsErr   error
	itemsDone  bool
	// made is how many units the step has made, -1 until counted (unitAllowed).
	made int
	// slotWaiting are the units that could have started in this pass but for a slot.
	slotWaiting int
}

// decideControlFlow moves a fan-out or looping step forward: start the units that may start,
// follow the running ones, and end the step once every unit has ended.
func (p *planner) decideControlFlow(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	if s != nil && s.Phase.Finished() {
		return
	}
	f := &flow{p: p, step: step, s: s, held: map[int]string{}, prev: map[int]string{}, made: -1}
	if s == nil {
		if p.stopReason != "" || !p.ready(step) {
			return
		}
		if !f.begin() {
			return
		}
	}
	f.u = loadUnits(step, f.s)
	if p.stopReason != "" {
		f.stop()
		return
	}
	f.drive()
	f.u.save(step.Spec.Retry != nil)
	f.settle()
}

// begin records the step as started, with its instances when it fans out. It returns false
// when the step ended at once: its list is empty or cannot be had.
func (f *flow) begin() bool {
	p, step := f.p, f.step
	f.s = p.record(step.Name)
	if step.FanOut != nil {
		items, err := f.list()
		if err != nil {
			p.fail(f.s, step, ergonv1alpha1.ReasonForEachError, err.Error())
			return false
		}
		if len(items) == 0 {
			p.end(f.s, ergonv1alpha1.StepSkipped, ergonv1alpha1.ReasonNoItems, "its forEach list is empty, so no instance ran")
			return false
		}
		if problem := p.instancesAllowed(len(items)); problem != "" {
			p.fail(f.s, step, ergonv1alpha1.ReasonUnitLimitReached, problem)
			return false
		}
		f.s.Instances = &ergonv1alpha1.InstancesStatus{Total: int32(len(items)),
			States: strings.Repeat(string(rune(ergonv1alpha1.InstanceNotStarted)), len(items))}
	}
	if step.Until != nil && step.FanOut == nil {
		f.s.Loop = &ergonv1alpha1.LoopStatus{Iteration: 1}
	}
	f.s.Phase = ergonv1alpha1.StepRunning
	p.start(f.s)
	return true
}

// list is the step's items, computed once per pass: the same every pass, since what they
// come from (literal, param, the outputs of finished steps) does not change during a Run.
func (f *flow) list() ([]any, error) {
	if f.itemsDone {
		return f.items, f.itemsErr
	}
	f.itemsDone = true
	fo := f.step.FanOut
	switch {
	case fo.Param != "":
		items, err := compile.ParseItems(f.p.params[fo.Param])
		if err != nil {
			f.itemsErr = fmt.Errorf("forEach.param %s %v", fo.Param, err)
		}
		f.items = items
	case fo.Expression != nil:
		items, err := fo.Expression.EvalList(f.p.exprVars())
		switch {
		case err != nil:
			f.itemsErr = err
		case len(items) > ergonv1alpha1.MaxForEachItems:
			f.itemsErr = fmt.Errorf("forEach.expression yielded %d items; a step fans out over at most %d: "+
				"split the list, for example with a sub-scene per chunk", len(items), ergonv1alpha1.MaxForEachItems)
		}
		f.items = items
	default:
		f.items = fo.Items
	}
	if f.itemsErr == nil && f.s != nil && f.s.Instances != nil && int(f.s.Instances.Total) != len(f.items) {
		f.itemsErr = fmt.Errorf("forEach now yields %d items where it yielded %d", len(f.items), f.s.Instances.Total)
	}
	return f.items, f.itemsErr
}

// drive follows running units, then starts waiting ones while the limits allow.
func (f *flow) drive() {
	u := f.u
	for i, st := range u.states {
		switch st {
		case ergonv1alpha1.InstanceRunning:
			f.follow(i)
		case ergonv1alpha1.InstanceNotStarted:
			// A pod or child Run the status does not record: the last status write was lost.
			if f.adopt(i) {
				f.follow(i)
			}
		}
	}
	par := 0
	if f.step.FanOut != nil {
		par = f.step.FanOut.Parallelism
	}
	running := int(u.count(ergonv1alpha1.InstanceRunning))
	failed := u.count(ergonv1alpha1.InstanceFailed) > 0
	for i, st := range u.states {
		if st != ergonv1alpha1.InstanceNotStarted {
			continue
		}
		if failed {
			u.states[i] = ergonv1alpha1.InstanceSkipped
			continue
		}
		if par > 0 && running >= par {
			continue
		}
		if !f.p.hasCapacity() {
			if f.p.slotRefused {
				f.slotWaiting++
			}
			continue
		}
		if f.startUnit(i) {
			running++
		}
		failed = u.count(ergonv1alpha1.InstanceFailed) > 0
	}
}

// settle ends the step once all its units have ended, or says how far it is.
func (f *flow) settle() {
	p, s, u := f.p, f.s, f.u
	if s.Phase.Finished() {
		return
	}
	ended := 0
	for _, st := range u.states {
		if st != ergonv1alpha1.InstanceNotStarted && st != ergonv1alpha1.InstanceRunning {
			ended++
		}
	}
	if ended < len(u.states) {
		was := s.Reason
		s.Phase, s.Reason, s.Message = ergonv1alpha1.StepRunning, "", ""
		if u.fan {
			s.Message = fmt.Sprintf("%d of %d instances finished", ended, len(u.states))
		} else if u.loop {
			s.Message = fmt.Sprintf("iteration %d of at most %d", u.iterations[0], f.step.Spec.Loop.MaxIterations)
		}
		if f.slotWaiting > 0 {
			wait := p.slotMessage()
			if u.fan {
				verb := "wait"
				if f.slotWaiting == 1 {
					verb = "waits"
				}
				wait = fmt.Sprintf("%s %s for a step pod slot%s", plural(f.slotWaiting, "instance", "instances"), verb, p.slotLimit())
			}
			s.Reason, s.Message = ergonv1alpha1.ReasonWaitingForSlot, s.Message+"; "+wait
			if was != ergonv1alpha1.ReasonWaitingForSlot {
				p.event(false, ergonv1alpha1.ReasonWaitingForSlot, "Step %s: %s", s.Name, wait)
			}
		}
		return
	}
	if n := u.count(ergonv1alpha1.InstanceFailed); n > 0 {
		if !u.fan {
			return // unitFailed ended the step
		}
		first := s.Instances.Failures[0]
		p.fail(s, f.step, instancesReason(first.Reason), fmt.Sprintf("%s of %d failed; instance %s: %s",
			plural(int(n), "instance", "instances"), len(u.states),
			naming.UnitName(s.Name, first.Index, 0), first.Message))
		return
	}
	value, size, ok := f.output()
	if reason, message := f.unreadable(); reason != "" {
		p.fail(s, f.step, reason, message)
		return
	}
	if !ok {
		// The outputs of instances that ended in earlier passes are read before the next.
		p.wakeAt(p.f.Now.Add(time.Second))
		return
	}
	what := "the step's output (its last iteration's)"
	if u.fan {
		what = fmt.Sprintf("the step's output (the JSON array of its %d instances' outputs)", len(u.states))
	}
	if size > MaxStoredValue {
		p.fail(s, f.step, ergonv1alpha1.ReasonOutputTooLarge, fmt.Sprintf("%s is more than the %s bytes one ConfigMap keeps: "+
			"have each instance hand back less, or keep large data elsewhere, such as a Workspace, and hand back where it is",
			what, wire.Thousands(MaxStoredValue)))
		return
	}
	s.Output = outputs.Value(p.f.Run.Name, s.Name, value)
	if s.Output.Ref != nil {
		if reason, message := p.keep(s, what, StoreRequest{ConfigMap: s.Output.Ref.ConfigMap, Step: s.Name, Value: value}); reason != "" {
			s.Output = nil
			p.fail(s, f.step, reason, message)
			return
		}
	}
	if p.f.Values == nil {
		p.f.Values = map[string]string{}
	}
	p.f.Values[s.Name] = value
	reason, message := "", ""
	if u.fan {
		message = fmt.Sprintf("all %d instances succeeded", len(u.states))
	}
	if s.Reason == ergonv1alpha1.ReasonExhausted {
		reason, message = ergonv1alpha1.ReasonExhausted, s.Message
	}
	p.end(s, ergonv1alpha1.StepSucceeded, reason, message)
}

// output is the step's output once every unit succeeded: a loop's last iteration's, or a
// fan-out's instances' outputs as a JSON array in item order, each as its JSON value when it
// is JSON and as a string otherwise. It is false while some are still to be read. An array
// that grows past what a ConfigMap keeps is not built further: size is then more than
// MaxStoredValue, and value is not the output.
func (f *flow) output() (value string, size int, ok bool) {
	values := make([]string, len(f.u.states))
	for i := range f.u.states {
		v, ok := f.held[i]
		if !ok {
			v, ok = f.p.f.Stored[f.u.valueConfigMap(f.p.f.Run.Name, f.s.Name, i)]
		}
		if !ok {
			return "", 0, false
		}
		values[i] = v
	}
	if !f.u.fan {
		return values[0], len(values[0]), true
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range values {
		if b.Len() > MaxStoredValue {
			return "", b.Len(), true
		}
		if i > 0 {
			b.WriteByte(',')
		}
		trimmed := strings.TrimSpace(v)
		if trimmed != "" && json.Valid([]byte(trimmed)) {
			b.WriteString(trimmed)
			continue
		}
		quoted, _ := json.Marshal(v) // a string always marshals
		b.Write(quoted)
	}
	b.WriteByte(']')
	return b.String(), b.Len(), true
}

// unreadable says why the output of a unit that succeeded in an earlier pass can never be
// read, as the reason and message the step fails with; "" when all may still be.
func (f *flow) unreadable() (reason, message string) {
	for i := range f.u.states {
		if _, ok := f.held[i]; ok {
			continue
		}
		name := f.u.valueConfigMap(f.p.f.Run.Name, f.s.Name, i)
		if _, ok := f.p.f.Stored[name]; ok {
			continue
		}
		if reason, message = f.lost(name, "the output of "+f.unitNoun(i)); reason != "" {
			return reason, message
		}
	}
	return "", ""
}

// instancesReason is the reason a fan-out fails with for its first failed instance: the
// instance's own when a limit failed it, so that the step says which limit; InstanceFailed
// otherwise.
func instancesReason(first string) string {
	switch first {
	case ergonv1alpha1.ReasonOutputTooLarge, ergonv1alpha1.ReasonConfigMapLimitReached, ergonv1alpha1.ReasonUnitLimitReached:
		return first
	}
	return ergonv1alpha1.ReasonInstanceFailed
}

// stop ends a step whose Run stops: its running units are stopped, the others never start.
func (f *flow) stop() {
	p, u := f.p, f.u
	for i, st := range u.states {
		switch st {
		case ergonv1alpha1.InstanceRunning:
			un := u.unit(i)
			if f.step.Spec.Scene != nil {
				p.plan.CancelChildren = append(p.plan.CancelChildren,
					naming.UnitChildRunName(p.f.Run.Name, f.s.Name, un.Index, un.Iteration))
			} else {
				p.plan.DeletePods = append(p.plan.DeletePods,
					naming.UnitPodName(p.f.Run.Name, f.s.Name, un.Index, un.Iteration, u.attempts[i]))
			}
			u.states[i] = ergonv1alpha1.InstanceCancelled
		case ergonv1alpha1.InstanceNotStarted:
			u.states[i] = ergonv1alpha1.InstanceCancelled
		}
	}
	u.save(f.step.Spec.Retry != nil)
	p.end(f.s, ergonv1alpha1.StepCancelled, p.stopReason, "the Run stopped: "+stopMessage(p.stopReason))
}
