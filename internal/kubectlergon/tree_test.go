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

package kubectlergon

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/tree")

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(seconds int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(seconds) * time.Second))
	return &t
}

// treeFixtures are Runs in the states the tree shows differently.
func treeFixtures() map[string]*Tree {
	publishing := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "release-7-publish-9f2c"},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1Ref("publish")},
		Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunSucceeded, Progress: "1/1", StartedAt: at(40), FinishedAt: at(52),
			Steps: []ergonv1alpha1.StepStatus{{Name: "post", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1,
				PodName: "release-7-publish-9f2c-post-1", StartedAt: at(41), FinishedAt: at(50),
				Output: &ergonv1alpha1.OutputValue{Size: 2}}}}}
	succeeded := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "release-7"},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1Ref("release")},
		Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunSucceeded, Progress: "4/4", StartedAt: at(0), FinishedAt: at(55),
			Conditions: []metav1.Condition{{Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue,
				Reason: "Succeeded", Message: "every step succeeded"}},
			Steps: []ergonv1alpha1.StepStatus{
				{Name: "build", Phase: ergonv1alpha1.StepSucceeded, Attempts: 2, PodName: "release-7-build-2",
					StartedAt: at(0), FinishedAt: at(20), Output: &ergonv1alpha1.OutputValue{Size: 901120},
					History: []ergonv1alpha1.AttemptStatus{{Attempt: 1, PodName: "release-7-build-1",
						Phase: ergonv1alpha1.StepFailed, Reason: "ExitCode", ExitCode: new(int32(3))}}},
				{Name: "summarize", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1, PodName: "release-7-summarize-1",
					StartedAt: at(20), FinishedAt: at(30), Usage: &ergonv1alpha1.AgentUsage{Turns: 3, TotalTokens: 1234}},
				{Name: "review", Phase: ergonv1alpha1.StepSucceeded, Gate: "release-7-review", Decision: "approve",
					StartedAt: at(30), FinishedAt: at(39)},
				{Name: "publish", Phase: ergonv1alpha1.StepSucceeded, ChildRun: publishing.Name, StartedAt: at(39), FinishedAt: at(55)},
			}}}
	gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "release-7-review"},
		Spec: ergonv1alpha1.GateSpec{Message: "Publish?", Decision: &ergonv1alpha1.GateDecision{Option: "approve",
			Comment: "looks good", User: "alice"}},
		Status: ergonv1alpha1.GateStatus{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice"}}
	order := []string{"build", "summarize", "review", "publish"}

	failed := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nightly-x"},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1Ref("nightly")},
		Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunFailed, Progress: "2/3", StartedAt: at(0), FinishedAt: at(75),
			Conditions: []metav1.Condition{{Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse,
				Reason: "StepFailed", Message: "step test failed"}},
			Steps: []ergonv1alpha1.StepStatus{
				// The attempt a failed step ended with is in its history too, as the planner records it.
				{Name: "test", Phase: ergonv1alpha1.StepFailed, Attempts: 1, PodName: "nightly-x-test-1",
					Reason: "ExitCode", Message: "the command exited with 1\nand more", StartedAt: at(0), FinishedAt: at(75),
					History: []ergonv1alpha1.AttemptStatus{{Attempt: 1, PodName: "nightly-x-test-1",
						Phase: ergonv1alpha1.StepFailed, Reason: "ExitCode", ExitCode: new(int32(1))}}},
				{Name: "report", Phase: ergonv1alpha1.StepSkipped, Reason: "DependencyFailed", FinishedAt: at(75)},
			},
			Storage: &ergonv1alpha1.StorageStatus{Bytes: 3 << 20, ConfigMaps: 6, MaxBytes: 16 << 20, MaxConfigMaps: 2000,
				MaxStepBytes: 4 << 20}}}
	waiting := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1Ref("deploy")},
		Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunWaiting, Progress: "1/3", StartedAt: at(0),
			Steps: []ergonv1alpha1.StepStatus{
				{Name: "plan", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1, PodName: "deploy-1-plan-1", StartedAt: at(0), FinishedAt: at(5)},
				{Name: "approve", Phase: ergonv1alpha1.StepWaiting, Gate: "deploy-1-approve", StartedAt: at(5)},
			}}}
	pendingGate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "deploy-1-approve"},
		Spec: ergonv1alpha1.GateSpec{Message: "Apply the plan to prod?\n3 changes"}}
	return map[string]*Tree{
		"succeeded": {Run: succeeded, Order: order, Gates: map[string]*ergonv1alpha1.Gate{gate.Name: gate},
			Children: map[string]*Tree{publishing.Name: {Run: publishing, Order: []string{"post"}}}},
		"failed":  {Run: failed, Order: []string{"test", "lint", "report"}},
		"waiting": {Run: waiting, Order: []string{"plan", "approve", "apply"}, Gates: map[string]*ergonv1alpha1.Gate{pendingGate.Name: pendingGate}},
		// A Run whose snapshot is not read yet: its steps in status order.
		"no-snapshot": {Run: waiting},
	}
}

func TestTreeGoldenFiles(t *testing.T) {
	for name, tree := range treeFixtures() {
		for _, color := range []bool{false, true} {
			file := name + ".txt"
			if color {
				file = name + ".color.txt"
			}
			t.Run(file, func(t *testing.T) {
				var out bytes.Buffer
				RenderTree(&out, tree, color, t0.Add(90*time.Second))
				golden := filepath.Join("testdata", "tree", file)
				if *update {
					if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -run TestTreeGoldenFiles -update to write it)", err)
				}
				if out.String() != string(want) {
					t.Errorf("tree differs from %s:\n%s\nwant:\n%s", golden, out.String(), want)
				}
				if !color && bytes.Contains(out.Bytes(), []byte("\x1b[")) {
					t.Error("a tree without colour has escape sequences")
				}
			})
		}
	}
}

func corev1Ref(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}
