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

package run

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// TestPodBuildersBuildEachPodWhole builds the pods of each kind of step from a request and
// the parts read before act, and checks that each comes out whole: what nothing edits after
// the builder (resources, the agent runtime's spec, the Workspace binding) is there, and the
// pod meets the restricted profile.
func TestPodBuildersBuildEachPodWhole(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	bins := ergonBinaries{Image: "ergon/manager:v1", Mode: BinariesImageVolume}
	small := &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
	own := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	desk := &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "desk", Namespace: "ns", UID: "ws-uid"},
		Spec: ergonv1alpha1.WorkspaceSpec{Image: "tools:1", Env: []corev1.EnvVar{{Name: "EDITOR", Value: "vi"},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
		Status: ergonv1alpha1.WorkspaceStatus{ClaimName: "desk-claim"}}
	scene := &compile.Scene{Spec: &ergonv1alpha1.SceneSpec{
		Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}}}}
	container := func(res corev1.ResourceRequirements) planner.PodRequest {
		step := &compile.Step{Name: "build", Spec: &ergonv1alpha1.Step{Name: "build",
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"make"}, Resources: res}}}
		return planner.PodRequest{Name: "r-build-1", Step: step, Attempt: 1, Rendered: &compile.Rendered{Command: []string{"make"}}}
	}
	agent := planner.PodRequest{Name: "r-think-1", Attempt: 1, Rendered: &compile.Rendered{AgentPrompt: "p"},
		Step: &compile.Step{Name: "think", Spec: &ergonv1alpha1.Step{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "p",
			Tools: []ergonv1alpha1.AgentTool{{Scene: "publish"}, {Scene: "later"}, {Name: ergonv1alpha1.ToolShell}}}}}}
	call := planner.ToolPodRequest{Name: "r-think-1-lint", Step: agent.Step, Attempt: 1, Tool: "lint", CallID: "c1",
		Image: "linter:1", Command: []string{"lint"}, Deadline: time.Minute}
	schema := json.RawMessage(`{"type":"object","required":["body"]}`)

	agentSpecOf := func(t *testing.T, pod *corev1.Pod) agentspec.Spec {
		var spec agentspec.Spec
		if err := json.Unmarshal([]byte(pod.Annotations[annotationAgentSpec]), &spec); err != nil {
			t.Fatalf("the agent runtime's spec does not parse: %v", err)
		}
		return spec
	}
	workspaceMount := func(pod *corev1.Pod) *corev1.VolumeMount {
		i := slices.IndexFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == workspaceVolume })
		if i < 0 {
			return nil
		}
		return &pod.Spec.Containers[0].VolumeMounts[i]
	}
	cases := []struct {
		name  string
		build func() *corev1.Pod
		check func(t *testing.T, pod *corev1.Pod)
	}{
		{"a container step without resources takes the manager's defaults",
			func() *corev1.Pod {
				return stepPod(run, scene, container(corev1.ResourceRequirements{}), podParts{bins: bins, defaults: small})
			},
			func(t *testing.T, pod *corev1.Pod) {
				if got := pod.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "250m" {
					t.Errorf("cpu limit %s, want the default 250m", got)
				}
			}},
		{"a container step keeps its own resources",
			func() *corev1.Pod { return stepPod(run, scene, container(own), podParts{bins: bins, defaults: small}) },
			func(t *testing.T, pod *corev1.Pod) {
				if r := pod.Spec.Containers[0].Resources; r.Limits.Memory().String() != "1Gi" || !r.Limits.Cpu().IsZero() {
					t.Errorf("resources %v, want its own", r)
				}
			}},
		{"a container step in a namespace whose LimitRange gives defaults gets none from the manager",
			func() *corev1.Pod {
				return stepPod(run, scene, container(corev1.ResourceRequirements{}), podParts{bins: bins})
			},
			func(t *testing.T, pod *corev1.Pod) {
				if r := pod.Spec.Containers[0].Resources; len(r.Limits)+len(r.Requests) > 0 {
					t.Errorf("resources %v, want none: the LimitRange's apply", r)
				}
			}},
		{"an agent step's Scene tools carry their Scene's params schema, or any object for a Scene not there yet",
			func() *corev1.Pod {
				return stepPod(run, scene, agent, podParts{bins: bins, schemas: map[string]json.RawMessage{"publish": schema}})
			},
			func(t *testing.T, pod *corev1.Pod) {
				spec := agentSpecOf(t, pod)
				got := map[string]string{}
				for _, c := range spec.CallTools {
					got[c.Scene] = string(c.Parameters)
				}
				if got["publish"] != string(schema) || got["later"] != `{"type":"object"}` {
					t.Errorf("Scene tools' schemas %v", got)
				}
				if spec.ToolEnv != nil || pod.Spec.Containers[0].Image != bins.Image {
					t.Errorf("outside a Workspace: tool env %v, image %s", spec.ToolEnv, pod.Spec.Containers[0].Image)
				}
			}},
		{"an agent step in a Workspace runs in its image on its node, its tools seeing its env but no Secret",
			func() *corev1.Pod {
				return stepPod(run, scene, agent, podParts{bins: bins, workspace: desk, node: "node-a", defaults: small})
			},
			func(t *testing.T, pod *corev1.Pod) {
				spec := agentSpecOf(t, pod)
				main := pod.Spec.Containers[0]
				if !slices.Equal(spec.ToolEnv, []string{"EDITOR"}) || main.Image != "tools:1" ||
					main.Resources.Limits.Cpu().String() != "2" {
					t.Errorf("tool env %v, image %s, resources %v", spec.ToolEnv, main.Image, main.Resources)
				}
				if m := workspaceMount(pod); m == nil || m.MountPath != stepcontract.DefaultWorkspace || m.ReadOnly {
					t.Errorf("the Workspace's volume is mounted %+v, want writable at %s", m, stepcontract.DefaultWorkspace)
				}
				if a := pod.Spec.Affinity; a == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.
					NodeSelectorTerms[0].MatchFields[0].Values[0] != "node-a" {
					t.Errorf("not pinned to the Workspace's node: %+v", a)
				}
			}},
		{"a tool call's pod in a Workspace mounts it read-only and takes the manager's defaults",
			func() *corev1.Pod {
				return toolPod(run, scene, call, podParts{bins: bins, workspace: desk, defaults: small})
			},
			func(t *testing.T, pod *corev1.Pod) {
				if m := workspaceMount(pod); m == nil || !m.ReadOnly {
					t.Errorf("the Workspace's volume is mounted %+v, want read-only", m)
				}
				if got := pod.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "250m" {
					t.Errorf("cpu limit %s, want the default 250m", got)
				}
				if pod.Labels[ergonv1alpha1.LabelToolCall] != "true" || pod.Annotations[annotationToolCall] != "c1" {
					t.Errorf("not labelled as the call's pod: %v %v", pod.Labels, pod.Annotations)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := c.build()
			c.check(t, pod)
			res := policy.AggregateCheckResults(evaluator.EvaluatePod(
				api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
			if !res.Allowed {
				t.Errorf("breaks the restricted profile: %s: %s", res.ForbiddenReason(), res.ForbiddenDetail())
			}
		})
	}
}

func TestAStepPodOfATracedManagerCarriesItsAttemptsSpan(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	bins := ergonBinaries{Image: "ergon/manager:v1", Mode: BinariesImageVolume}
	req := planner.PodRequest{Name: "r-build-2", Attempt: 2, Rendered: &compile.Rendered{Command: []string{"make"},
		Env: []corev1.EnvVar{{Name: "TRACEPARENT", Value: "the step's own"}}},
		Step: &compile.Step{Name: "build", Spec: &ergonv1alpha1.Step{Name: "build",
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"make"}}}}}
	want := tracing.Traceparent(tracing.AttemptContext(run, "build", 2))
	env := stepPod(run, &compile.Scene{}, req, podParts{bins: bins, traced: true}).Spec.Containers[0].Env
	if len(env) == 0 || env[0].Name != stepcontract.EnvTraceparent || env[0].Value != want {
		t.Errorf("env %v, want TRACEPARENT=%s first, so that the step's own may follow it", env, want)
	}
	if env[len(env)-1].Value != "the step's own" {
		t.Errorf("the step's own TRACEPARENT is not last: %v", env)
	}
	for _, e := range stepPod(run, &compile.Scene{}, req, podParts{bins: bins}).Spec.Containers[0].Env {
		if e.Name == stepcontract.EnvTraceparent && e.Value != "the step's own" {
			t.Errorf("an untraced manager's pod carries TRACEPARENT=%s", e.Value)
		}
	}
}

func TestAToolPodOfATracedManagerCarriesItsCallsSpan(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	bins := ergonBinaries{Image: "ergon/manager:v1", Mode: BinariesImageVolume}
	call := planner.ToolPodRequest{Name: "r-think-2-lint", Attempt: 2, Tool: "lint", CallID: "c7", Image: "tools:1",
		Command: []string{"lint"}, Step: &compile.Step{Name: "think", Spec: &ergonv1alpha1.Step{Name: "think",
			Agent: &ergonv1alpha1.AgentStep{Prompt: "p"}}}}
	want := tracing.Traceparent(tracing.ToolCallContext(run, "think", 2, "c7"))
	traceparent := func(pod *corev1.Pod) string {
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == stepcontract.EnvTraceparent {
				return e.Value
			}
		}
		return ""
	}
	if got := traceparent(toolPod(run, &compile.Scene{}, call, podParts{bins: bins, traced: true})); got != want {
		t.Errorf("TRACEPARENT=%q, want the call's execute_tool span %s", got, want)
	}
	if got := traceparent(toolPod(run, &compile.Scene{}, call, podParts{bins: bins})); got != "" {
		t.Errorf("an untraced manager's tool pod carries TRACEPARENT=%s", got)
	}
}
