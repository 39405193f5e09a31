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

package triggers

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

func trigger() *ergonv1alpha1.Trigger {
	return &ergonv1alpha1.Trigger{
		ObjectMeta: metav1.ObjectMeta{Name: "chain", Namespace: "team", UID: "t-1", Generation: 1},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "publish"},
			Params:   map[string]string{"channel": "general", "body": "default"},
			RunCompleted: &ergonv1alpha1.RunCompletedSource{
				SceneRef: corev1.LocalObjectReference{Name: "report"},
				Params:   map[string]string{"body": "run.outputs.draft.preview + ' (' + run.name + ')'"},
			},
		},
	}
}

func TestNewRunOverlaysMappedParamsAndIsOwnedByTheTrigger(t *testing.T) {
	tr := trigger()
	run := NewRun(tr, "chain-abc", map[string]string{"body": "mapped"})
	if want := map[string]string{"channel": "general", "body": "mapped"}; !maps.Equal(run.Spec.Params, want) {
		t.Errorf("params = %v, want %v", run.Spec.Params, want)
	}
	if tr.Spec.Params["body"] != "default" {
		t.Error("NewRun changed the Trigger's own params")
	}
	if run.Labels[ergonv1alpha1.LabelTrigger] != "chain" || run.Labels[ergonv1alpha1.LabelManagedBy] != ergonv1alpha1.ManagedByErgon {
		t.Errorf("labels = %v", run.Labels)
	}
	if ref := metav1.GetControllerOf(run); ref == nil || ref.UID != "t-1" || ref.Kind != "Trigger" {
		t.Errorf("controller = %+v, want the Trigger", ref)
	}
	if run.Namespace != "team" || run.Spec.SceneRef.Name != "publish" {
		t.Errorf("run %s/%s of %s", run.Namespace, run.Name, run.Spec.SceneRef.Name)
	}
	if _, ok := run.Annotations[ergonv1alpha1.AnnotationCreatedBy]; ok {
		t.Errorf("a Trigger without a recorded creator names none, got %v", run.Annotations)
	}
}

func TestNewRunIsCreatedByTheTriggersCreator(t *testing.T) {
	tr := trigger()
	tr.Annotations = map[string]string{ergonv1alpha1.AnnotationCreator: "alice"}
	run := NewRun(tr, "chain-abc", nil)
	if got := run.Annotations[ergonv1alpha1.AnnotationCreatedBy]; got != "alice" {
		t.Errorf("created-by = %q, want the Trigger's creator alice", got)
	}
}

func TestNewRunActsAsWhoeverLastChangedTheTrigger(t *testing.T) {
	tr := trigger()
	mallory := ergonv1alpha1.UserIdentity{Username: "mallory", UID: "m-1", Groups: []string{"night-shift"}}
	tr.Annotations = map[string]string{ergonv1alpha1.AnnotationCreator: "alice",
		ergonv1alpha1.AnnotationIdentity: identity.Encode(mallory)}
	run := NewRun(tr, "chain-abc", nil)
	got, ok, err := identity.Of(run, ergonv1alpha1.AnnotationIdentity)
	if err != nil || !ok || identity.Key(got) != identity.Key(mallory) {
		t.Fatalf("identity = %v (%v, %v), want the Trigger's, mallory's", got, ok, err)
	}
	if by := run.Annotations[ergonv1alpha1.AnnotationCreatedBy]; by != "mallory" {
		t.Errorf("created-by = %q, want mallory, whom the Trigger acts as, not its creator", by)
	}

	tr.Annotations = map[string]string{ergonv1alpha1.AnnotationCreator: "alice"}
	if _, ok, _ := identity.Of(NewRun(tr, "chain-def", nil), ergonv1alpha1.AnnotationIdentity); ok {
		t.Error("a Trigger without an identity gave its Run one")
	}
}

func TestRunCompletedMappingsReadTheFinishedRun(t *testing.T) {
	var cache MappingCache
	m, err := cache.Get(trigger())
	if err != nil {
		t.Fatal(err)
	}
	source := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "weekly-1", Namespace: "team", UID: "r-1"}}
	source.Status.Phase = ergonv1alpha1.RunSucceeded
	source.Status.Outputs = map[string]ergonv1alpha1.OutputValue{"draft": {Preview: "Sprint 43", Size: 9}}
	vars, err := RunVars(source)
	if err != nil {
		t.Fatal(err)
	}
	params, err := m.Eval(vars)
	if err != nil {
		t.Fatal(err)
	}
	if params["body"] != "Sprint 43 (weekly-1)" {
		t.Errorf("body = %q", params["body"])
	}

	source.Status.Outputs = nil
	vars, _ = RunVars(source)
	if _, err := m.Eval(vars); err == nil || !strings.Contains(err.Error(), "spec.runCompleted.params[body]") {
		t.Errorf("a mapping over a missing output: error %v, want one naming the field", err)
	}
}

func TestMappingCacheCompilesEachGenerationOnce(t *testing.T) {
	var cache MappingCache
	tr := trigger()
	first, _ := cache.Get(tr)
	again, _ := cache.Get(tr)
	if first != again {
		t.Error("the same generation was compiled twice")
	}
	tr.Generation = 2
	tr.Spec.RunCompleted.Params = map[string]string{"body": "run.phase"}
	changed, err := cache.Get(tr)
	if err != nil {
		t.Fatal(err)
	}
	if changed == first {
		t.Fatal("a new generation reused the old mappings")
	}
	params, _ := changed.Eval(map[string]any{"run": map[string]any{"phase": "Succeeded"}})
	if params["body"] != "Succeeded" {
		t.Errorf("body = %q", params["body"])
	}
	if _, err := cache.Get(&ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "bad", UID: "x"},
		Spec: ergonv1alpha1.TriggerSpec{Webhook: &ergonv1alpha1.WebhookSource{Params: map[string]string{"a": "body."}}}}); err == nil {
		t.Error("a mapping that does not compile was accepted")
	}
}

func TestMappingCachePruneForgetsOnlyWhatKeepDenies(t *testing.T) {
	var cache MappingCache
	kept, gone := trigger(), trigger()
	gone.Name, gone.UID = "deleted", "uid-deleted"
	keptFirst, _ := cache.Get(kept)
	goneFirst, _ := cache.Get(gone)
	cache.Prune(func(key types.NamespacedName) bool { return key.Name == kept.Name })
	if again, _ := cache.Get(kept); again != keptFirst {
		t.Error("Prune dropped a Trigger keep returned true for")
	}
	if again, _ := cache.Get(gone); again == goneFirst {
		t.Error("Prune kept a Trigger keep returned false for")
	}
}
