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

package controllers

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
)

// CacheOptions says what the manager caches of the kinds it creates but does not define:
// pods, ConfigMaps, and Workspaces' volume claims and NetworkPolicies. The API server selects them
// by Ergon's managed-by label, so the cache
// does not hold every pod in the cluster. A label is no proof, though: anyone who may create a
// pod can set it. So of the objects the label selects, only those a Run controls are kept
// whole (and the pods a Workspace controls); any other is cut down to its name and identity as it enters the cache, and costs the
// manager a few hundred bytes however large it was. Such an object is never used either (the
// Run controller checks the controlling owner of what it uses) and never counts against the
// step pod slots (counted from the Runs' own status; see slotUsages).
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon})
	return cache.Options{
		// No controller reads managedFields; on Runs and step pods they are a good part of
		// the object. An update without them keeps the stored ones.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Label: managed, Transform: keepRunControlled},
			&corev1.ConfigMap{}: {Label: managed, Transform: keepRunControlled},
			// Small objects, one of each per Workspace.
			&corev1.PersistentVolumeClaim{}: {Label: managed},
			&networkingv1.NetworkPolicy{}:   {Label: managed},
			// Workspaces' write leases; not the nodes' or anyone else's.
			&coordinationv1.Lease{}: {Label: managed},
		}}
}

// keepRunControlled is the cache transform of CacheOptions. A Workspace's own pod is kept as
// it is but for its managedFields; a Run's step pod is kept as slimPod cuts it.
func keepRunControlled(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	if shared.RunControlled(o) || shared.WorkspaceControlled(o) {
		o.SetManagedFields(nil)
		if pod, isPod := obj.(*corev1.Pod); isPod && shared.RunControlled(o) {
			return slimPod(pod), nil
		}
		return obj, nil
	}
	meta := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
		ResourceVersion: o.GetResourceVersion(), CreationTimestamp: o.GetCreationTimestamp(),
		DeletionTimestamp: o.GetDeletionTimestamp()}
	switch obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{ObjectMeta: meta}, nil
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta}, nil
	}
	return obj, nil
}

// slimPod is what the manager keeps of a Run's step pod, most of which it made itself and never
// reads again: the metadata but its annotations (the agent spec, the inputs: the pod's own
// business; only AnnotationStandsFor stays, by which a pod under an alternate name is found
// again, controllers/run/squatters.go), the node, the restart policies (whether an ended container is the
// pod's end), the name, image and resources of each container (pod messages name them), and
// the whole status. With 10,000 step pods running this is most of the manager's heap
// (docs/performance.md). Nothing writes a cached step pod back: its spec is immutable,
// and the Run controller only creates and deletes step pods.
func slimPod(pod *corev1.Pod) *corev1.Pod {
	slim := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta, Status: pod.Status}
	slim.Annotations = nil
	if name, ok := pod.Annotations[ergonv1alpha1.AnnotationStandsFor]; ok {
		slim.Annotations = map[string]string{ergonv1alpha1.AnnotationStandsFor: name}
	}
	slim.Spec.NodeName, slim.Spec.RestartPolicy = pod.Spec.NodeName, pod.Spec.RestartPolicy
	slim.Spec.Containers = slimContainers(pod.Spec.Containers)
	slim.Spec.InitContainers = slimContainers(pod.Spec.InitContainers)
	return slim
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	slim := make([]corev1.Container, len(cs))
	for i, c := range cs {
		slim[i] = corev1.Container{Name: c.Name, Image: c.Image, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return slim
}
