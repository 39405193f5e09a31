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

package security

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The generated attack matrix. Every reference a step can carry to an object a person may or
// may not read is found by reflection over the API's Go types (below: the upstream selectors
// by their types, wherever they sit in a container step or a model), and put, one at a time,
// in every place a Scene can hold a step: steps, finally, a forEach step, a loop step, a Scene
// it calls, and a Scene its agent calls as a tool. Each case is tried twice, as real users:
//
//   - at admission, by someone who may not read the object: the Scene is refused, naming it;
//   - at the effect, by people who could read it when the Scene and the Run were admitted and
//     no longer can when the step starts: the step fails NotAuthorized, naming who may not
//     read what, and its pod is never created. Once the person behind the Run loses access,
//     once the Scene's last editor does (the Run's own person still may).
//
// A new reference field of one of these types, or a new kind of step place, joins the matrix
// without a line here changing; the walker (internal/closure) must report every generated
// reference, or the matrix fails before it tries anything.

// matrixSelectors are the upstream types that name a Secret or a ConfigMap, as Kubernetes
// lists a pod's references to them.
var matrixSelectors = map[reflect.Type]closure.Kind{
	reflect.TypeFor[corev1.SecretKeySelector]():    closure.KindSecret,
	reflect.TypeFor[corev1.SecretEnvSource]():      closure.KindSecret,
	reflect.TypeFor[corev1.ConfigMapKeySelector](): closure.KindConfigMap,
	reflect.TypeFor[corev1.ConfigMapEnvSource]():   closure.KindConfigMap,
}

// reference is one field that can name an object, and how to set it.
type reference struct {
	kind closure.Kind
	// in is what holds it: "container" (a container step's) or "model" (an agent step's model).
	in   string
	path string // JSON path within what holds it
	set  func(v reflect.Value, name string)
}

// referencesIn lists the reference fields of type t, by reflection; set, given an addressable
// value of t, makes that one field name an object (and fills the fields it requires).
func referencesIn(t reflect.Type, path string, depth int) []reference {
	if k, ok := matrixSelectors[t]; ok {
		return []reference{{kind: k, path: path, set: func(v reflect.Value, name string) {
			v.FieldByName("Name").SetString(name)
			if key := v.FieldByName("Key"); key.IsValid() {
				key.SetString("k")
			}
		}}}
	}
	if depth > 8 {
		return nil
	}
	var out []reference
	switch t.Kind() {
	case reflect.Pointer:
		for _, r := range referencesIn(t.Elem(), path, depth+1) {
			out = append(out, reference{kind: r.kind, path: r.path, set: func(v reflect.Value, name string) {
				if v.IsNil() {
					v.Set(reflect.New(t.Elem()))
				}
				r.set(v.Elem(), name)
			}})
		}
	case reflect.Slice:
		for _, r := range referencesIn(t.Elem(), path+"[0]", depth+1) {
			out = append(out, reference{kind: r.kind, path: r.path, set: func(v reflect.Value, name string) {
				v.Set(reflect.Append(v, reflect.New(t.Elem()).Elem()))
				elem := v.Index(v.Len() - 1)
				fillRequired(elem)
				r.set(elem, name)
			}})
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || tag == "" || tag == "-" {
				continue
			}
			for _, r := range referencesIn(f.Type, path+"."+tag, depth+1) {
				out = append(out, reference{kind: r.kind, path: r.path, set: func(v reflect.Value, name string) {
					fillRequired(v)
					r.set(v.Field(i), name)
				}})
			}
		}
	}
	return out
}

// fillRequired gives the empty required strings of a struct (those without omitempty) a value
// any of them takes: an environment variable's name.
func fillRequired(v reflect.Value) {
	if v.Kind() != reflect.Struct {
		return
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag := f.Tag.Get("json")
		if f.IsExported() && f.Type.Kind() == reflect.String && tag != "" && !strings.Contains(tag, "omitempty") &&
			v.Field(i).String() == "" {
			v.Field(i).SetString("FROM_MATRIX")
		}
	}
}

// matrixReferences are the references of the two step kinds that read objects.
func matrixReferences() []reference {
	var out []reference
	for _, r := range referencesIn(reflect.TypeFor[ergonv1alpha1.ContainerStep](), "container", 0) {
		r.in = "container"
		out = append(out, r)
	}
	for _, r := range referencesIn(reflect.TypeFor[ergonv1alpha1.ModelSpec](), "models[default]", 0) {
		r.in = "model"
		out = append(out, r)
	}
	return out
}

// target is the step of a case: it holds the reference, named "target".
func (r reference) target(spec *ergonv1alpha1.SceneSpec, name string) ergonv1alpha1.Step {
	model := ergonv1alpha1.ModelSpec{BaseURL: "http://llm.models.svc/v1", Model: "small"}
	if r.in == "model" {
		r.set(reflect.ValueOf(&model).Elem(), name)
		spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": model}
		return ergonv1alpha1.Step{Name: "target", Agent: &ergonv1alpha1.AgentStep{Prompt: "Work."}}
	}
	c := ergonv1alpha1.ContainerStep{Image: "busybox:1.36", Command: []string{"true"}}
	r.set(reflect.ValueOf(&c).Elem(), name)
	return ergonv1alpha1.Step{Name: "target", Container: &c}
}

// place puts a case's target step somewhere in a Scene named caller. It returns the Scenes to
// create: the one holding the target first, the one to run (caller) last.
type place struct {
	name string
	put  func(ns, caller string, r reference, object string) (scenes []*ergonv1alpha1.Scene)
}

var ok = ergonv1alpha1.Step{Name: "ok", Container: &ergonv1alpha1.ContainerStep{Image: "busybox:1.36", Command: []string{"true"}}}

func holding(ns, name string, r reference, object string,
	arrange func(spec *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step)) *ergonv1alpha1.Scene {
	s := newScene(ns, name)
	arrange(&s.Spec, r.target(&s.Spec, object))
	return s
}

var matrixPlaces = []place{
	{"steps", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		return []*ergonv1alpha1.Scene{holding(ns, caller, r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			s.Steps = []ergonv1alpha1.Step{t}
		})}
	}},
	{"finally", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		return []*ergonv1alpha1.Scene{holding(ns, caller, r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			s.Steps, s.Finally = []ergonv1alpha1.Step{ok}, []ergonv1alpha1.Step{t}
		})}
	}},
	{"forEach", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		return []*ergonv1alpha1.Scene{holding(ns, caller, r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			t.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: []byte(`["a","b"]`)}}
			s.Steps = []ergonv1alpha1.Step{ok, t}
			s.Steps[1].DependsOn = []string{"ok"}
		})}
	}},
	{"loop", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		return []*ergonv1alpha1.Scene{holding(ns, caller, r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			t.Loop = &ergonv1alpha1.Loop{Until: "outputs.pass", MaxIterations: 2}
			s.Steps = []ergonv1alpha1.Step{t}
		})}
	}},
	{"callee", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		callee := holding(ns, caller+"-callee", r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			s.Steps = []ergonv1alpha1.Step{t}
		})
		return []*ergonv1alpha1.Scene{callee, newScene(ns, caller,
			ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(callee.Name)}})}
	}},
	{"scene-tool", func(ns, caller string, r reference, object string) []*ergonv1alpha1.Scene {
		callee := holding(ns, caller+"-tool", r, object, func(s *ergonv1alpha1.SceneSpec, t ergonv1alpha1.Step) {
			s.Steps = []ergonv1alpha1.Step{t}
		})
		s := newScene(ns, caller, ergonv1alpha1.Step{Name: "agent", Agent: &ergonv1alpha1.AgentStep{Prompt: "Use the tool.",
			Tools: []ergonv1alpha1.AgentTool{{Scene: ergonv1alpha1.SceneName(callee.Name)}}}})
		s.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
		return []*ergonv1alpha1.Scene{callee, s}
	}},
}

// matrixCase is one reference in one place.
type matrixCase struct {
	ref    reference
	place  place
	object string // the Secret or ConfigMap it names, its own
}

func matrixCases() []matrixCase {
	var out []matrixCase
	for i, r := range matrixReferences() {
		for _, p := range matrixPlaces {
			out = append(out, matrixCase{ref: r, place: p, object: strings.ToLower(fmt.Sprintf("ref%d-%s", i, p.name))})
		}
	}
	return out
}

func (c matrixCase) String() string {
	return fmt.Sprintf("%s %s in %s", c.ref.kind, c.ref.path, c.place.name)
}

// createObject makes the case's Secret or ConfigMap, as the namespace's admin would.
func (c matrixCase) createObject(ns string) {
	GinkgoHelper()
	meta := metav1.ObjectMeta{Namespace: ns, Name: c.object}
	if c.ref.kind == closure.KindSecret {
		Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": "v"}})).To(Succeed())
		return
	}
	Expect(admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}})).To(Succeed())
}

var _ = Describe("The generated matrix: every reference a step can carry, in every place a step can be", Ordered, func() {
	cases := matrixCases()

	It("finds the references by type, and the walker reports each of them where the matrix put it", func() {
		kinds := map[closure.Kind]bool{}
		for _, c := range cases {
			kinds[c.ref.kind] = true
			spec := &ergonv1alpha1.SceneSpec{}
			spec.Steps = []ergonv1alpha1.Step{c.ref.target(spec, c.object)}
			found := false
			for _, got := range closure.Own(spec) {
				if got.Kind == c.ref.kind && got.Name == c.object {
					found = true
				}
			}
			Expect(found).To(BeTrue(), "the walker does not report %s", c)
		}
		// At least the four selectors of a container step and a model's key, in six places.
		Expect(kinds).To(HaveKey(closure.KindSecret))
		Expect(kinds).To(HaveKey(closure.KindConfigMap))
		Expect(len(cases)).To(BeNumerically(">=", 5*len(matrixPlaces)))
	})

	It("refuses at admission each case from someone who may not read the object, naming it", func() {
		ns := newNamespace()
		mallory := userClient(ns, "mallory", roleErgonEditor)
		for i, c := range cases {
			c.createObject(ns)
			scenes := c.place.put(ns, fmt.Sprintf("a%d", i), c.ref, c.object)
			// A callee is someone else's, admitted from its own editor; the caller is mallory's.
			for _, s := range scenes[:len(scenes)-1] {
				Expect(admin.Create(ctx, s)).To(Succeed())
			}
			err := mallory.Create(ctx, scenes[len(scenes)-1])
			Expect(err).To(HaveOccurred(), "admission accepted %s", c)
			Expect(err.Error()).To(ContainSubstring(c.object), "%s", c)
		}
	})

	It("refuses at the effect each case once the Run's person, or the Scene's editor, lost access after admission", func() {
		ns := newNamespace()
		kubelet.Use(ns, func(pod *corev1.Pod) testenv.Outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "agent" && pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return handOver(agentspec.ToolRequest{ID: "call_1", Tool: pod.Labels[ergonv1alpha1.LabelRun] + "-tool",
					Kind: agentspec.RequestScene, Arguments: `{}`})
			}
			return testenv.Outcome{Output: "done"}
		})
		DeferCleanup(func() { kubelet.Use(ns, nil) })
		runKubelet()

		// ed and rita may read the cases' objects until they may not; olga (edit) always may.
		var names []string
		for _, c := range cases {
			c.createObject(ns)
			names = append(names, c.object)
		}
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "matrix-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"},
				ResourceNames: names, Verbs: []string{"get"}}}})).To(Succeed())
		reader := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "matrix-reader"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "matrix-reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "ed"},
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "rita"}}}
		Expect(admin.Create(ctx, reader)).To(Succeed())
		ed := userClient(ns, "ed", roleErgonEditor)
		rita := userClient(ns, "rita", roleErgonEditor)
		olga := userClient(ns, "olga", roleEdit)

		// Each case twice: Scenes of ed run by olga, and Scenes of olga run by rita. Runs wait,
		// suspended, while access is revoked.
		type trial struct {
			c             matrixCase
			runner, loser string
			run, heldBy   string // the Run, and the Scene that holds the target
		}
		var trials []trial
		for i, c := range cases {
			for _, who := range []struct {
				editor, runner client.Client
				runnerName     string
				loser          string
				prefix         string
			}{{ed, olga, "olga", "ed", "e"}, {olga, rita, "rita", "rita", "r"}} {
				name := fmt.Sprintf("%s%d", who.prefix, i)
				scenes := c.place.put(ns, name, c.ref, c.object)
				for _, s := range scenes {
					Expect(who.editor.Create(ctx, s)).To(Succeed(), "%s", c)
				}
				run := newRun(ns, name, name, nil)
				run.Spec.Suspend = true
				Expect(who.runner.Create(ctx, run)).To(Succeed(), "%s", c)
				trials = append(trials, trial{c: c, runner: who.runnerName, loser: who.loser, run: name, heldBy: scenes[0].Name})
			}
		}
		Eventually(func(g Gomega) {
			runs := &ergonv1alpha1.RunList{}
			g.Expect(admin.List(ctx, runs, client.InNamespace(ns))).To(Succeed())
			for _, r := range runs.Items {
				g.Expect(r.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended), "Run %s", r.Name)
			}
		}).WithTimeout(time.Minute).Should(Succeed())

		Expect(admin.Delete(ctx, reader)).To(Succeed())
		for _, who := range []string{"ed", "rita"} {
			Eventually(func(g Gomega) {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: who,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: names[0]}}}
				g.Expect(admin.Create(ctx, sar)).To(Succeed())
				g.Expect(sar.Status.Allowed).To(BeFalse())
			}).Should(Succeed())
		}
		for _, t := range trials {
			Expect(admin.Patch(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: t.run}},
				client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
		}

		// Each target fails, not authorized, in the case's own Run or in the child Run of its
		// callee, naming who lost access and the object; no pod of a target exists.
		Eventually(func(g Gomega) {
			runs := &ergonv1alpha1.RunList{}
			g.Expect(admin.List(ctx, runs, client.InNamespace(ns))).To(Succeed())
			var missed []string
			for _, t := range trials {
				refused, seen := false, []string{}
				for i := range runs.Items {
					r := &runs.Items[i]
					if r.Spec.SceneRef.Name != t.heldBy || (r.Name != t.run && r.Labels[ergonv1alpha1.LabelParentRun] != t.run) {
						continue
					}
					for _, s := range r.Status.Steps {
						if s.Name != "target" {
							continue
						}
						seen = append(seen, fmt.Sprintf("%s: %s %s %q", r.Name, s.Phase, s.Reason, s.Message))
						// A forEach step fails InstanceFailed, with its instance's message.
						if s.Phase == ergonv1alpha1.StepFailed && strings.Contains(s.Message, "not authorized: "+t.loser) &&
							strings.Contains(s.Message, t.c.object) {
							refused = true
						}
					}
				}
				if !refused {
					missed = append(missed, fmt.Sprintf("%s (Scene %s, Run %s by %s, %s lost access): %v", t.c, t.heldBy, t.run, t.runner, t.loser, seen))
				}
			}
			g.Expect(missed).To(BeEmpty(), "targets not refused at the effect, naming who lost access and the object")
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(admin.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelStep: "target"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "a target's pod was created")
	})
})
