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

package shared

import (
	"context"
	"slices"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
)

// The cache's field indexes, by the field they index. Every controller lists through them
// freely: each one's SetupWithManager calls SetupIndexes, which registers them all once per
// manager, so no controller depends on another having been set up first.
const (
	// SceneRefField indexes Runs by the Scene they name.
	SceneRefField = "spec.sceneRef.name"
	// RunCompletedSceneField indexes Triggers by the Scene whose Runs they wait for.
	RunCompletedSceneField = "spec.runCompleted.sceneRef.name"
	// SceneCallsField indexes Scenes by the Scenes their steps call.
	SceneCallsField = "spec.steps.scene.name"
	// SceneWorkspaceField indexes Scenes by the Workspace they are bound to.
	SceneWorkspaceField = "spec.workspace.name"
	// causeRootField indexes Runs by the root of their cause (the annotation
	// ergon.dev/cause-root, which only the manager sets); a Run without one is not indexed.
	causeRootField = "metadata.annotations.cause-root"
)

// fieldIndexes are the indexes SetupIndexes registers.
var fieldIndexes = []struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}{
	{&ergonv1alpha1.Run{}, SceneRefField, func(obj client.Object) []string {
		return []string{obj.(*ergonv1alpha1.Run).Spec.SceneRef.Name}
	}},
	{&ergonv1alpha1.Run{}, causeRootField, func(obj client.Object) []string {
		if root := obj.GetAnnotations()[ergonv1alpha1.AnnotationCauseRoot]; root != "" {
			return []string{root}
		}
		return nil
	}},
	{&ergonv1alpha1.Trigger{}, RunCompletedSceneField, func(obj client.Object) []string {
		if s := obj.(*ergonv1alpha1.Trigger).Spec.RunCompleted; s != nil {
			return []string{s.SceneRef.Name}
		}
		return nil
	}},
	{&ergonv1alpha1.Scene{}, SceneCallsField, func(obj client.Object) []string {
		return CalledScenes(&obj.(*ergonv1alpha1.Scene).Spec)
	}},
	{&ergonv1alpha1.Scene{}, SceneWorkspaceField, func(obj client.Object) []string {
		if ws := obj.(*ergonv1alpha1.Scene).Spec.Workspace; ws != nil {
			return []string{ws.Name}
		}
		return nil
	}},
}

// indexesOnce holds, per manager, the one registration of fieldIndexes and its outcome.
var indexesOnce sync.Map // ctrl.Manager -> *indexRegistration

type indexRegistration struct {
	once sync.Once
	err  error
}

// SetupIndexes registers every field index with the manager's cache, once however many
// controllers call it.
func SetupIndexes(mgr ctrl.Manager) error {
	v, _ := indexesOnce.LoadOrStore(mgr, &indexRegistration{})
	reg := v.(*indexRegistration)
	reg.once.Do(func() {
		for _, ix := range fieldIndexes {
			if reg.err = mgr.GetFieldIndexer().IndexField(context.Background(), ix.obj, ix.field, ix.extract); reg.err != nil {
				return
			}
		}
	})
	return reg.err
}

// CausedBy lists the names of the Runs whose cause's root is root, from the cache's index.
func CausedBy(ctx context.Context, reader client.Reader, namespace, root string) ([]string, error) {
	list := &ergonv1alpha1.RunList{}
	// Only the names are read, so the cache's objects need no copies.
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{causeRootField: root},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	return names, nil
}

// CalledScenes are the Scenes a Scene calls, each once, in the walker's order: through its
// sub-scene steps, in steps and finally, and as its agents' Scene tools.
func CalledScenes(spec *ergonv1alpha1.SceneSpec) []string {
	var names []string
	for _, ref := range closure.OfKind(closure.Own(spec), closure.KindScene) {
		if !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	return names
}
