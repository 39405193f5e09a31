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
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/dag"
)

func TestReused(t *testing.T) {
	// fetch -> draft -> review -> publish, lint beside draft, and notes alone.
	g, err := dag.Build([]dag.Node{
		{Name: "fetch"}, {Name: "draft", DependsOn: []string{"fetch"}}, {Name: "lint", DependsOn: []string{"fetch"}},
		{Name: "review", DependsOn: []string{"draft", "lint"}}, {Name: "publish", DependsOn: []string{"review"}}, {Name: "notes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }
	cases := []struct {
		name      string
		succeeded func(string) bool
		ref       ergonv1alpha1.RetryReference
		want      []string
	}{
		{"a retry reuses every step that succeeded", func(s string) bool { return s != "review" && s != "publish" },
			ergonv1alpha1.RetryReference{Name: "old"}, []string{"draft", "fetch", "lint", "notes"}},
		{"a retry does not reuse a success downstream of a failure", func(s string) bool { return s != "draft" },
			ergonv1alpha1.RetryReference{Name: "old"}, []string{"fetch", "lint", "notes"}},
		{"a rerun from a step runs it and its descendants again", all,
			ergonv1alpha1.RetryReference{Name: "old", From: "draft"}, []string{"fetch", "lint", "notes"}},
		{"a rerun from a root runs everything downstream again", all,
			ergonv1alpha1.RetryReference{Name: "old", From: "fetch"}, []string{"notes"}},
		{"a rerun from a sink reuses everything else", all,
			ergonv1alpha1.RetryReference{Name: "old", From: "publish"}, []string{"draft", "fetch", "lint", "notes", "review"}},
		{"a rerun still runs what did not succeed upstream", func(s string) bool { return s != "lint" },
			ergonv1alpha1.RetryReference{Name: "old", From: "publish"}, []string{"draft", "fetch", "notes"}},
		{"a replay reuses nothing", all, ergonv1alpha1.RetryReference{Name: "old", Replay: true}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(Reused(g, tc.succeeded, &tc.ref)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("reused %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetryProblem(t *testing.T) {
	snapshot := &ergonv1alpha1.SceneSpec{}
	original := func(phase ergonv1alpha1.RunPhase) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "etl"},
			Params: map[string]string{"n": "1"}}, Status: ergonv1alpha1.RunStatus{Phase: phase, SceneSnapshot: snapshot}}
	}
	retry := func(ref ergonv1alpha1.RetryReference, params map[string]string) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "etl"},
			Params: params, RetryOf: &ref}}
	}
	same := map[string]string{"n": "1"}
	edited := map[string]string{"n": "2"}
	cases := []struct {
		name      string
		run       *ergonv1alpha1.Run
		original  *ergonv1alpha1.Run
		wantField string
		wantText  string
	}{
		{"a retry of a failure", retry(ergonv1alpha1.RetryReference{Name: "o"}, same), original(ergonv1alpha1.RunFailed), "", ""},
		{"a retry of a success is refused", retry(ergonv1alpha1.RetryReference{Name: "o"}, same), original(ergonv1alpha1.RunSucceeded),
			"spec.retryOf.name", "succeeded"},
		{"a retry with other params is refused", retry(ergonv1alpha1.RetryReference{Name: "o"}, edited), original(ergonv1alpha1.RunFailed),
			"spec.params", "copy spec.params"},
		{"a rerun from a step of a success with edited params", retry(ergonv1alpha1.RetryReference{Name: "o", From: "x"}, edited),
			original(ergonv1alpha1.RunSucceeded), "", ""},
		{"a replay of a success", retry(ergonv1alpha1.RetryReference{Name: "o", Replay: true}, edited),
			original(ergonv1alpha1.RunSucceeded), "", ""},
		{"a rerun of a Run still running is refused", retry(ergonv1alpha1.RetryReference{Name: "o", Replay: true}, same),
			original(ergonv1alpha1.RunRunning), "spec.retryOf.name", "has not finished"},
		{"a rerun of another Scene is refused", func() *ergonv1alpha1.Run {
			r := retry(ergonv1alpha1.RetryReference{Name: "o", From: "x"}, same)
			r.Spec.SceneRef.Name = "other"
			return r
		}(), original(ergonv1alpha1.RunFailed), "spec.sceneRef.name", "ran Scene etl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			field, problem := RetryProblem(tc.run, tc.original)
			if field != tc.wantField || !strings.Contains(problem, tc.wantText) {
				t.Errorf("got %q %q, want %q containing %q", field, problem, tc.wantField, tc.wantText)
			}
		})
	}
}
