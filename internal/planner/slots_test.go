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

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

const namespaceFull = "namespace ns holds 40 of 40 (--max-step-pods-per-namespace)"

// slotEvents counts the plan's WaitingForSlot Events.
func slotEvents(p *Plan) int {
	n := 0
	for _, e := range p.Events {
		if e.Reason == ergonv1alpha1.ReasonWaitingForSlot {
			n++
		}
	}
	return n
}

func TestAStepThatWaitsForASlotSaysWhichLimitOnceAndStartsWhenOneIsFree(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	asked := []int{}
	budget := 0
	plan := func() *Plan {
		f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs, MaxDepth: 5,
			Slots: func(active int) (int, string) { asked = append(asked, active); return budget, namespaceFull }}
		p := Decide(f)
		w.run.Status = p.Status
		return p
	}
	first := plan()
	s := w.run.Status.Steps[0]
	if len(first.Pods) != 0 || s.Phase != ergonv1alpha1.StepPending || s.Reason != ergonv1alpha1.ReasonWaitingForSlot {
		t.Fatalf("with no slot: %d pods, step %s/%s", len(first.Pods), s.Phase, s.Reason)
	}
	if want := "waits for a step pod slot: " + namespaceFull; s.Message != want {
		t.Fatalf("message %q, want %q", s.Message, want)
	}
	if first.WaitingForSlots != 1 || slotEvents(first) != 1 {
		t.Fatalf("WaitingForSlots %d, Events %d, want 1 and 1", first.WaitingForSlots, slotEvents(first))
	}
	if c := w.run.Status.Conditions; len(c) == 0 || !strings.Contains(c[0].Message, namespaceFull) {
		t.Fatalf("the Run's condition does not say what the step waits for: %+v", c)
	}
	if again := plan(); slotEvents(again) != 0 {
		t.Fatalf("the same wait was told again: %+v", again.Events)
	}
	budget = 1
	if p := plan(); len(p.Pods) != 1 || w.run.Status.Steps[0].Reason == ergonv1alpha1.ReasonWaitingForSlot {
		t.Fatalf("with a slot free: %d pods, reason %s", len(p.Pods), w.run.Status.Steps[0].Reason)
	}
	if len(asked) != 3 || asked[0] != 0 {
		t.Fatalf("the slots were asked %v, want once per pass with nothing held", asked)
	}
}

func TestAFanOutCountsTheInstancesThatWaitForASlot(t *testing.T) {
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "fan",
		ForEach:   &ergonv1alpha1.ForEach{Items: jsonOf(t, []string{"a", "b", "c", "d", "e"})},
		Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"echo", "{{ .item }}"}}}}},
		func(string, Unit, int32, []string) unitResult { return unitResult{phase: PodSucceeded, value: "x"} })
	w.budget = 2
	p := w.plan()
	if len(p.Pods) != 2 || p.WaitingForSlots != 3 {
		t.Fatalf("started %d, waiting %d; want 2 and 3", len(p.Pods), p.WaitingForSlots)
	}
	s := w.status("fan")
	if s.Reason != ergonv1alpha1.ReasonWaitingForSlot || !strings.Contains(s.Message, "3 instances wait for a step pod slot") {
		t.Fatalf("step %s: %q", s.Reason, s.Message)
	}
	if slotEvents(p) != 1 {
		t.Fatalf("%d WaitingForSlot Events, want 1", slotEvents(p))
	}
	w.budget = 0
	if p := w.plan(); slotEvents(p) != 0 {
		t.Fatal("the wait was told twice")
	}
	w.budget = -1
	w.runToEnd()
	if s := w.status("fan"); s.Phase != ergonv1alpha1.StepSucceeded || s.Reason == ergonv1alpha1.ReasonWaitingForSlot {
		t.Fatalf("step %s/%s", s.Phase, s.Reason)
	}
}

func TestASceneStepWaitsForASlotThenStartsItsChildRun(t *testing.T) {
	spec := ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "sub", Scene: &ergonv1alpha1.SceneCall{Name: "other"}}}}
	w := newFlowWorld(t, spec, nil)
	w.budget = 0
	if p := w.plan(); len(p.Children) != 0 || w.status("sub").Reason != ergonv1alpha1.ReasonWaitingForSlot {
		t.Fatalf("with no slot: %d children, step %+v", len(p.Children), w.status("sub"))
	}
	w.budget = 1
	if p := w.plan(); len(p.Children) != 1 || w.status("sub").Phase != ergonv1alpha1.StepRunning {
		t.Fatalf("with a slot: %d children, step %+v", len(p.Children), w.status("sub"))
	}
}

func TestPodsThatWaitForAQuotaAreRetriedButThoseThePlanCreatesAnew(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	facts := func(waiting ...string) *Facts {
		return &Facts{Now: w.now, Run: w.run.DeepCopy(), Scene: w.scene, Pods: w.pods, Outputs: w.outputs, MaxDepth: 5,
			PodBudget: -1, QuotaWaiting: waiting}
	}
	first := Decide(facts())
	if len(first.Pods) != 1 || first.RetryPods != nil {
		t.Fatalf("without waiting pods: %d pods, retries %v", len(first.Pods), first.RetryPods)
	}
	created := first.Pods[0].Name
	p := Decide(facts("z-waits", created, "b-waits"))
	if !slices.Equal(p.RetryPods, []string{"b-waits", "z-waits"}) {
		t.Fatalf("RetryPods %v, want the waiting pods but the one the plan creates anew, sorted", p.RetryPods)
	}
	if p.RequeueAfter == 0 || p.RequeueAfter > QuotaRetry {
		t.Fatalf("planned again in %s, want at most %s", p.RequeueAfter, QuotaRetry)
	}
}

func TestARunThatWaitsForASlotIsPlannedAgainWithinSlotRetry(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	p := Decide(&Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs, MaxDepth: 5,
		Slots: func(int) (int, string) { return 0, namespaceFull }})
	if p.WaitingForSlots != 1 || p.RequeueAfter == 0 || p.RequeueAfter > SlotRetry {
		t.Fatalf("waiting %d, planned again in %s; want 1 and at most %s", p.WaitingForSlots, p.RequeueAfter, SlotRetry)
	}
}
