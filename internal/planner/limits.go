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

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// The limits on what one Run makes and keeps: the units a step makes, and the outputs its
// steps keep in ConfigMaps (docs/limits.md). Each is checked where the work is made, before
// it is asked for: a unit past the limit is never started, an output past a limit is never
// written, and the step fails with a message that names the limit, its value and how to
// raise it. A limit reached does not pass by trying again (what a Run keeps only grows), so
// these failures take no retry; a failure branch or continueOnFailure applies as to any.

// Limits bound what one Run makes and keeps. A zero field is no limit.
type Limits struct {
	// UnitsPerStep bounds the units (fan-out instances times loop iterations) one step makes.
	UnitsPerStep int
	// StepOutputBytes bounds the bytes one step keeps in ConfigMaps, its units' included.
	StepOutputBytes int64
	// RunOutputBytes bounds the bytes all steps of a Run keep in ConfigMaps.
	RunOutputBytes int64
	// ConfigMapsPerRun bounds the output ConfigMaps one Run creates.
	ConfigMapsPerRun int
}

// DefaultLimits are the manager's defaults (docs/limits.md says why): a 1,000-item fan-out
// and its fan-in fit, and one Run keeps under 1% of etcd's default 2 GiB quota.
var DefaultLimits = Limits{UnitsPerStep: 1000, StepOutputBytes: 4 << 20, RunOutputBytes: 16 << 20, ConfigMapsPerRun: 2000}

// The flags and chart values that set each limit, for messages.
const (
	unitsLimitName     = "--max-units-per-step (chart value manager.maxUnitsPerStep)"
	stepBytesLimitName = "--max-step-output-bytes (chart value manager.maxStepOutputBytes)"
	runBytesLimitName  = "--max-run-output-bytes (chart value manager.maxRunOutputBytes)"
	configMapLimitName = "--max-configmaps-per-run (chart value manager.maxConfigMapsPerRun)"
)

// MaxStoredValue is the most one ConfigMap keeps: a step's output and its transcript
// together, a unit's output, or a fan-in's or loop's value. It is what a step may hand back.
const MaxStoredValue = wire.MaxSize

// MaxRendered bounds what a step's templates render into one object (a pod's command, args
// and env; a child Run's params; a Gate's message): the API server stores no object larger
// than 1.5 MiB, and the object needs room for the rest of its spec.
const MaxRendered = 1 << 20

// storable says why a value of size bytes cannot be kept for step s in the ConfigMap named
// cm, as the reason and message the step fails with; "" when it can. what names the value
// for the message ("the output of instance 3").
func (p *planner) storable(s *ergonv1alpha1.StepStatus, cm, what string, size int64) (reason, message string) {
	l := p.f.Limits
	switch {
	case p.f.Refused[cm] != "":
		return ergonv1alpha1.ReasonOutputError, fmt.Sprintf("the API server refused ConfigMap %s, which would keep %s: %s",
			cm, what, p.f.Refused[cm])
	case size > MaxStoredValue:
		return ergonv1alpha1.ReasonOutputTooLarge, fmt.Sprintf("%s is %s bytes, more than the %s one ConfigMap keeps: "+
			"hand back less (fewer or smaller outputs), or keep large data elsewhere, such as a Workspace, and hand back where it is",
			what, wire.Thousands(int(size)), wire.Thousands(MaxStoredValue))
	case l.StepOutputBytes > 0 && s.StoredBytes+size > l.StepOutputBytes:
		return ergonv1alpha1.ReasonOutputTooLarge, fmt.Sprintf("%s is %s bytes and step %s keeps %s already: "+
			"more than the %s bytes one step may keep; raise %s, or hand back less",
			what, wire.Thousands(int(size)), s.Name, wire.Thousands(int(s.StoredBytes)),
			wire.Thousands(int(l.StepOutputBytes)), stepBytesLimitName)
	case l.RunOutputBytes > 0 && p.storage.Bytes+size > l.RunOutputBytes:
		return ergonv1alpha1.ReasonOutputTooLarge, fmt.Sprintf("%s is %s bytes and the Run keeps %s already: "+
			"more than the %s bytes one Run may keep; raise %s, or hand back less",
			what, wire.Thousands(int(size)), wire.Thousands(int(p.storage.Bytes)),
			wire.Thousands(int(l.RunOutputBytes)), runBytesLimitName)
	case l.ConfigMapsPerRun > 0 && int(p.storage.ConfigMaps) >= l.ConfigMapsPerRun:
		return ergonv1alpha1.ReasonConfigMapLimitReached, fmt.Sprintf("keeping %s would take a ConfigMap more than the %s "+
			"one Run may create for its outputs; raise %s, or split the work into more Runs",
			what, wire.Thousands(l.ConfigMapsPerRun), configMapLimitName)
	}
	return "", ""
}

// storedSoFar is what the Run's status says it keeps. A status without a storage record yet
// counts its steps' storedBytes, one ConfigMap each: the outputs a retry (spec.retryOf)
// copied before its first pass.
func storedSoFar(status *ergonv1alpha1.RunStatus) ergonv1alpha1.StorageStatus {
	if status.Storage != nil {
		return *status.Storage
	}
	var st ergonv1alpha1.StorageStatus
	for _, s := range status.Steps {
		if s.StoredBytes > 0 {
			st.Bytes += s.StoredBytes
			st.ConfigMaps++
		}
	}
	return st
}

// keep asks for req to be kept for step s, unless storable says why not: then nothing is
// kept, and the reason and message are returned.
func (p *planner) keep(s *ergonv1alpha1.StepStatus, what string, req StoreRequest) (reason, message string) {
	size := int64(len(req.Value) + len(req.Transcript))
	if reason, message = p.storable(s, req.ConfigMap, what, size); reason != "" {
		return reason, message
	}
	p.plan.Store = append(p.plan.Store, req)
	p.account(s, size)
	return "", ""
}

// account counts a ConfigMap of size bytes that step s keeps.
func (p *planner) account(s *ergonv1alpha1.StepStatus, size int64) {
	s.StoredBytes += size
	p.storage.Bytes += size
	p.storage.ConfigMaps++
}

// storageStatus is the Run's storage record with the limits in effect; nil while the Run
// keeps nothing and no limit is set, so Runs of a manager without limits look as before.
func (p *planner) storageStatus() *ergonv1alpha1.StorageStatus {
	l := p.f.Limits
	st := ergonv1alpha1.StorageStatus{Bytes: p.storage.Bytes, ConfigMaps: p.storage.ConfigMaps,
		MaxBytes: l.RunOutputBytes, MaxConfigMaps: int32(l.ConfigMapsPerRun), MaxStepBytes: l.StepOutputBytes}
	if st == (ergonv1alpha1.StorageStatus{}) {
		return nil
	}
	return &st
}

// keepStepOutput checks that a plain step's output and transcript can be kept before the
// step succeeds with them (decideStores asks for them at the end of the pass). A transcript
// is a record, not data for later steps: when it does not fit beside the output it is not
// kept, and an Event says so. It returns the transcript to keep, and the reason and message
// the step fails with when the output itself cannot be kept.
func (p *planner) keepStepOutput(s *ergonv1alpha1.StepStatus, cm string, out Output) (transcript, reason, message string) {
	value := int64(len(out.Value))
	transcript = out.Transcript
	if transcript != "" {
		// The ConfigMap that keeps a transcript keeps the output beside it, however small.
		if r, m := p.storable(s, cm, "the output and transcript of step "+s.Name, value+int64(len(transcript))); r != "" {
			p.event(true, ergonv1alpha1.ReasonOutputTooLarge, "Step %s: its transcript of %s bytes is not kept: %s",
				s.Name, wire.Thousands(len(transcript)), m)
			transcript = ""
		}
	}
	if transcript == "" && value <= outputs.PreviewSize {
		return "", "", "" // the status holds it all
	}
	if reason, message = p.storable(s, cm, "the output of step "+s.Name, value); reason != "" {
		return "", reason, message
	}
	p.account(s, value+int64(len(transcript)))
	return transcript, "", ""
}

// made is how many units the step has made: each instance's iterations before its current
// one, and the current one once it started (its retries are the same unit).
func (u *units) made() int {
	n := 0
	for i := range u.states {
		n += int(u.iterations[i]) - 1
		if u.attempts[i] > 0 {
			n++
		}
	}
	return n
}

// unitAllowed says why unit i may not start, as the message its failure carries; "" when it
// may. A retry of a unit that started is not a new unit.
func (f *flow) unitAllowed(i int) string {
	limit := f.p.f.Limits.UnitsPerStep
	if limit <= 0 || f.u.attempts[i] > 0 {
		return ""
	}
	if f.made < 0 {
		f.made = f.u.made()
	}
	if f.made < limit {
		return ""
	}
	return fmt.Sprintf("step %s has made %s units (fan-out instances times loop iterations), the most one step may make; "+
		"raise %s, or split the work, for example with a sub-scene per chunk",
		f.s.Name, wire.Thousands(f.made), unitsLimitName)
}

// instancesAllowed says why a fan-out of n instances may not start at all: each instance is
// a unit at least. "" when it may.
func (p *planner) instancesAllowed(n int) string {
	limit := p.f.Limits.UnitsPerStep
	if limit <= 0 || n <= limit {
		return ""
	}
	return fmt.Sprintf("forEach yields %s items, and each is a unit: more than the %s units one step may make; "+
		"raise %s, or split the list, for example with a sub-scene per chunk",
		wire.Thousands(n), wire.Thousands(limit), unitsLimitName)
}

// renderedSize is how many bytes a step's templates rendered into the object they go into.
func renderedSize(r *compile.Rendered) int {
	n := len(r.GateMessage) + len(r.AgentSystem) + len(r.AgentPrompt)
	for _, s := range r.Command {
		n += len(s)
	}
	for _, s := range r.Args {
		n += len(s)
	}
	for _, e := range r.ParamEnv {
		n += len(e.Name) + len(e.Value)
	}
	for _, e := range r.Env {
		n += len(e.Name) + len(e.Value)
	}
	for k, v := range r.SceneParams {
		n += len(k) + len(v)
	}
	return n
}

// renderedProblem says why a step's rendered templates do not fit the object they go into;
// "" when they do. Templates that read the outputs of many steps, or a loop's previous
// output, grow with them.
func renderedProblem(r *compile.Rendered) string {
	n := renderedSize(r)
	if n <= MaxRendered {
		return ""
	}
	return fmt.Sprintf("the step's templates render %s bytes (command, args, env, params or message), more than the %s "+
		"that fit in the object they go into: hand large outputs over as inputs ($ERGON_INPUTS) instead of through a template",
		wire.Thousands(n), wire.Thousands(MaxRendered))
}
