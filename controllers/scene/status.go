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

package scene

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/health"
	"github.com/ergon-dev/ergon/internal/validate"
)

// maxConditionMessage bounds a Ready message built from compile errors: a Scene of a thousand
// broken steps must not make its status too large to write.
const maxConditionMessage = 4096

// sceneFacts is what the Scene controller reads before it decides a Scene's status.
type sceneFacts struct {
	scene *ergonv1alpha1.Scene
	// namespace holds the Scenes of the Scene's namespace, itself included or not.
	namespace []ergonv1alpha1.Scene
	// workspaceFound says whether the Workspace spec.workspace names exists.
	workspaceFound bool
}

// sceneEvent is the Event a change of a Scene's Ready condition is announced with.
type sceneEvent struct {
	warning         bool
	reason, message string
}

// sceneStatus decides a Scene's status: its facts (steps, params, the Scenes it calls) and a
// Ready condition from the compiler admission uses, so a Scene admitted with webhooks is
// Ready unless something it names is missing. It is pure; the reconciler writes it.
func sceneStatus(f sceneFacts, now metav1.Time) (ergonv1alpha1.SceneStatus, *sceneEvent) {
	scene := f.scene
	status := scene.Status.DeepCopy()
	status.ObservedGeneration = scene.Generation
	status.StepCount = int32(len(scene.Spec.Steps))
	status.Params = nil
	for _, p := range scene.Spec.Params {
		status.Params = append(status.Params, p.Name)
	}
	status.Calls = shared.CalledScenes(&scene.Spec)

	value, reason, message := sceneReadiness(f, status.Calls)
	before := meta.FindStatusCondition(scene.Status.Conditions, ergonv1alpha1.ConditionReady)
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionReady, Status: value,
		Reason: reason, Message: message, ObservedGeneration: scene.Generation, LastTransitionTime: now})
	health.Set(&status.Conditions, scene.Generation, now, health.Scene(status))

	if before != nil && before.Status == value && before.Reason == reason {
		return *status, nil
	}
	return *status, &sceneEvent{warning: value != metav1.ConditionTrue, reason: reason, message: message}
}

// sceneReadiness says whether a Scene can run: it compiles (as admission compiles it), and
// the Scenes and Workspace it names exist.
func sceneReadiness(f sceneFacts, calls []string) (metav1.ConditionStatus, string, string) {
	scene := f.scene
	errs := validate.Scene(&scene.Spec)
	cycleErrs, _ := validate.SceneCallsIn(scene, f.namespace)
	if errs = append(errs, cycleErrs...); len(errs) > 0 {
		return metav1.ConditionFalse, ergonv1alpha1.ReasonCompileFailed, truncate(
			fmt.Sprintf("the Scene does not compile; Runs of it fail until its spec is fixed: %v", errs.ToAggregate()))
	}
	var missing []string
	for _, name := range calls {
		if !slices.ContainsFunc(f.namespace, func(s ergonv1alpha1.Scene) bool { return s.Name == name }) {
			missing = append(missing, fmt.Sprintf("%q", name))
		}
	}
	if len(missing) > 0 {
		return metav1.ConditionFalse, ergonv1alpha1.ReasonSceneRefMissing, fmt.Sprintf(
			"calls Scene %s, which does not exist in namespace %s; Runs of it wait at that step until it does",
			strings.Join(missing, ", "), scene.Namespace)
	}
	if ws := scene.Spec.Workspace; ws != nil && !f.workspaceFound {
		return metav1.ConditionFalse, ergonv1alpha1.ReasonWorkspaceMissing, fmt.Sprintf(
			"%s: Workspace %q does not exist in namespace %s", field.NewPath("spec", "workspace", "name"), ws.Name, scene.Namespace)
	}
	return metav1.ConditionTrue, ergonv1alpha1.ReasonCompiled, fmt.Sprintf(
		"%d steps compile, and every Scene and Workspace the Scene names exists", len(scene.Spec.Steps))
}

func truncate(message string) string {
	if len(message) <= maxConditionMessage {
		return message
	}
	return message[:maxConditionMessage-3] + "..."
}
