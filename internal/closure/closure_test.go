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

package closure

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func secretEnv(secret string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "token"}}}}
}

func containerReading(name, secret string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox", Command: []string{"true"}, Env: secretEnv(secret)}}
}

func calling(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
}

func agentWithSceneTool(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Agent: &ergonv1alpha1.AgentStep{Prompt: "hi",
		Tools: []ergonv1alpha1.AgentTool{{Scene: ergonv1alpha1.SceneName(scene)}}}}
}

func sceneOf(name string, steps []ergonv1alpha1.Step, finally ...ergonv1alpha1.Step) ergonv1alpha1.Scene {
	return ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ergonv1alpha1.SceneSpec{Steps: steps, Finally: finally}}
}

// line is a Ref as a test reads it: "PATH KIND NAME [VIA] @SCENE".
func line(r Ref) string {
	s := fmt.Sprintf("%s %s %s", r.Path, r.Kind, r.Name)
	if r.Via != "" {
		s += " [" + r.Via + "]"
	}
	return s + " @" + r.Scene
}

func TestWalkFindsWhatAScenesClosureUses(t *testing.T) {
	workspace := ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: ergonv1alpha1.WorkspaceSpec{User: "alice", Env: secretEnv("alice-token")}}
	cases := []struct {
		name       string
		root       ergonv1alpha1.Scene
		namespace  []ergonv1alpha1.Scene
		workspaces []ergonv1alpha1.Workspace
		want       []string // lines of refs that must be among the walk's
		scenes     []string
		cycle      string
		missing    []string
	}{
		{name: "a Secret read by a container step in spec.finally",
			root:   sceneOf("a", []ergonv1alpha1.Step{calling("noop", "none")}, containerReading("cleanup", "tracker")),
			want:   []string{"spec.finally[0].container.env[0].valueFrom.secretKeyRef Secret tracker @a"},
			scenes: []string{"a"}, missing: []string{"spec.steps[0].scene.name Scene none"}},
		{name: "a Secret read in the finally of a Scene a step calls",
			root: sceneOf("a", []ergonv1alpha1.Step{calling("call", "b")}),
			namespace: []ergonv1alpha1.Scene{sceneOf("b", []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}},
				containerReading("notify", "tracker"))},
			want: []string{
				"spec.steps[0].scene.name Scene b @a",
				"spec.steps[0].scene.name Secret tracker [Scene b's spec.finally[0].container.env[0].valueFrom.secretKeyRef] @b",
			},
			scenes: []string{"a", "b"}},
		{name: "a Secret read by the Scene an agent calls as a tool, in a finally step",
			root: sceneOf("a", []ergonv1alpha1.Step{calling("call", "b")}, agentWithSceneTool("summarise", "c")),
			namespace: []ergonv1alpha1.Scene{
				sceneOf("b", nil),
				sceneOf("c", []ergonv1alpha1.Step{containerReading("lookup", "tracker")}),
			},
			want: []string{
				"spec.finally[0].agent.tools[0].scene Scene c @a",
				"spec.finally[0].agent.tools[0].scene Secret tracker [Scene c's spec.steps[0].container.env[0].valueFrom.secretKeyRef] @c",
			},
			scenes: []string{"a", "b", "c"}},
		{name: "a Secret read by the env of the Workspace a callee binds",
			root: sceneOf("a", []ergonv1alpha1.Step{calling("call", "b")}),
			namespace: []ergonv1alpha1.Scene{func() ergonv1alpha1.Scene {
				b := sceneOf("b", []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}})
				b.Spec.Workspace = &corev1.LocalObjectReference{Name: "alice"}
				return b
			}()},
			workspaces: []ergonv1alpha1.Workspace{workspace},
			want: []string{
				"spec.steps[0].scene.name Workspace alice [Scene b's spec.workspace.name] @b",
				"spec.steps[0].scene.name Secret alice-token " +
					"[Scene b's spec.workspace.name, Workspace alice's spec.env[0].valueFrom.secretKeyRef] @b",
			},
			scenes: []string{"a", "b"}},
		{name: "a Secret read by the env of the Scene's own Workspace, which is missing for another",
			root: func() ergonv1alpha1.Scene {
				a := sceneOf("a", []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}})
				a.Spec.Workspace = &corev1.LocalObjectReference{Name: "alice"}
				return a
			}(),
			workspaces: []ergonv1alpha1.Workspace{workspace},
			want: []string{
				"spec.workspace.name Workspace alice @a",
				"spec.workspace.name Secret alice-token [Workspace alice's spec.env[0].valueFrom.secretKeyRef] @a",
			},
			scenes: []string{"a"}},
		{name: "a cycle through a Scene tool",
			root:      sceneOf("a", []ergonv1alpha1.Step{agentWithSceneTool("ask", "b")}),
			namespace: []ergonv1alpha1.Scene{sceneOf("b", []ergonv1alpha1.Step{calling("back", "a")})},
			scenes:    []string{"a", "b"}, cycle: "spec.steps[0].agent.tools[0].scene: a -> b -> a"},
		{name: "a cycle through finally steps",
			root: sceneOf("a", []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}}, calling("after", "b")),
			namespace: []ergonv1alpha1.Scene{
				sceneOf("b", []ergonv1alpha1.Step{calling("c", "c")}),
				sceneOf("c", []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}}, calling("again", "b")),
			},
			scenes: []string{"a", "b", "c"}, cycle: "spec.finally[0].scene.name: a -> b -> c -> b"},
		{name: "a Scene calling itself",
			root:   sceneOf("a", []ergonv1alpha1.Step{calling("again", "a")}),
			scenes: []string{"a"}, cycle: "spec.steps[0].scene.name: a -> a"},
		{name: "a diamond is no cycle, and its shared Scene is walked once",
			root: sceneOf("a", []ergonv1alpha1.Step{calling("left", "b"), calling("right", "c")}),
			namespace: []ergonv1alpha1.Scene{
				sceneOf("b", []ergonv1alpha1.Step{calling("d", "d")}),
				sceneOf("c", nil, agentWithSceneTool("d", "d")),
				sceneOf("d", []ergonv1alpha1.Step{containerReading("read", "tracker")}),
			},
			want: []string{
				"spec.steps[0].scene.name Secret tracker [Scene d's spec.steps[0].container.env[0].valueFrom.secretKeyRef] @d",
			},
			scenes: []string{"a", "b", "d", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Walk(tc.root.Name, &tc.root.Spec, Objects(tc.namespace, tc.workspaces))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range c.Refs {
				got = append(got, line(r))
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %q among\n%s", w, strings.Join(got, "\n"))
				}
			}
			if !slices.Equal(c.Scenes, tc.scenes) {
				t.Errorf("scenes %q, want %q", c.Scenes, tc.scenes)
			}
			cycle := ""
			if c.Cycle != nil {
				cycle = fmt.Sprintf("%s: %s", c.Cycle.Path, strings.Join(c.Cycle.Scenes, " -> "))
			}
			if cycle != tc.cycle {
				t.Errorf("cycle %q, want %q", cycle, tc.cycle)
			}
			var missing []string
			for _, m := range c.Missing {
				missing = append(missing, fmt.Sprintf("%s %s %s", m.Path, m.Kind, m.Name))
			}
			if !slices.Equal(missing, tc.missing) {
				t.Errorf("missing %q, want %q", missing, tc.missing)
			}
		})
	}
}

func TestWalkListsEachRefOnceThroughADiamond(t *testing.T) {
	root := sceneOf("a", []ergonv1alpha1.Step{calling("left", "b"), calling("right", "c")})
	c, err := Walk("a", &root.Spec, Objects([]ergonv1alpha1.Scene{
		sceneOf("b", []ergonv1alpha1.Step{calling("d", "d")}),
		sceneOf("c", []ergonv1alpha1.Step{calling("d", "d")}),
		sceneOf("d", []ergonv1alpha1.Step{containerReading("read", "tracker")}),
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if secrets := OfKind(c.Refs, KindSecret); len(secrets) != 1 || c.Cycle != nil {
		t.Fatalf("secrets %v, cycle %v: want tracker once and no cycle", secrets, c.Cycle)
	}
}

func TestWalkNeverAsksForTheRoot(t *testing.T) {
	// The namespace's Scene a is the old version; the walk is of the new spec, which calls b.
	old := sceneOf("a", []ergonv1alpha1.Step{containerReading("old", "old-secret")})
	root := sceneOf("a", []ergonv1alpha1.Step{calling("b", "b")})
	c, err := Walk("a", &root.Spec, Objects([]ergonv1alpha1.Scene{old, sceneOf("b", []ergonv1alpha1.Step{calling("back", "a")})}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(OfKind(c.Refs, KindSecret)) != 0 || c.Cycle == nil {
		t.Fatalf("refs %v, cycle %v: want the old spec unread and the call back a cycle", c.Refs, c.Cycle)
	}
}

func TestWalkTriggerFollowsItsScene(t *testing.T) {
	spec := &ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "report"},
		Webhook: &ergonv1alpha1.WebhookSource{SecretRef: corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hook-key"}, Key: "k"}},
		RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: "build"}}}
	c, err := WalkTrigger(spec, Objects([]ergonv1alpha1.Scene{
		sceneOf("report", []ergonv1alpha1.Step{containerReading("post", "tracker")}),
		sceneOf("build", []ergonv1alpha1.Step{containerReading("never", "build-secret")}),
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Refs {
		got = append(got, line(r))
	}
	want := []string{
		"spec.webhook.secretRef Secret hook-key @",
		"spec.runCompleted.sceneRef.name WatchedScene build @",
		"spec.sceneRef.name Scene report @",
		"spec.sceneRef.name Secret tracker [Scene report's spec.steps[0].container.env[0].valueFrom.secretKeyRef] @report",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStepsYieldsStepsThenFinally(t *testing.T) {
	spec := sceneOf("a", []ergonv1alpha1.Step{{Name: "one"}, {Name: "two"}}, ergonv1alpha1.Step{Name: "last"}).Spec
	var got []string
	for path, s := range Steps(&spec) {
		got = append(got, path.String()+"="+s.Name)
	}
	if want := []string{"spec.steps[0]=one", "spec.steps[1]=two", "spec.finally[0]=last"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
