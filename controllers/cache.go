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
)

// CacheOptions says what the manager caches of the kinds it creates but does not define:
// pods, ConfigMaps, and Workspaces' volume claims and NetworkPolicies. The API server selects them
// by Ergon's managed-by label, so the cache
// does not hold every pod in the cluster. A label is no proof, though: anyone who may create a
// pod can set it. So of the objects the label selects, only those a Run controls are kept
// whole (and the pods a Workspace controls); any other is cut down to its name and identity as it enters the cache, and costs the
// manager a few hundred bytes however large it was. Such an object is never used either (the
// Run controller checks the controlling owner of what it uses) and never counts against the
// step pod budget (counted from the Runs' own status; see activeSlots).
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon})
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:       {Label: managed, Transform: keepRunControlled},
		&corev1.ConfigMap{}: {Label: managed, Transform: keepRunControlled},
		// Small objects, one of each per Workspace.
		&corev1.PersistentVolumeClaim{}: {Label: managed},
		&networkingv1.NetworkPolicy{}:   {Label: managed},
		// Workspaces' write leases; not the nodes' or anyone else's.
		&coordinationv1.Lease{}: {Label: managed},
	}}
}

// keepRunControlled is the cache transform of CacheOptions.
func keepRunControlled(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok || runControlled(o) || workspaceControlled(o) {
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

// runControlled reports whether obj's controlling owner is a Run.
func runControlled(obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == "Run" && ref.APIVersion == ergonv1alpha1.GroupVersion.String()
}

// workspaceControlled reports whether obj's controlling owner is a Workspace.
func workspaceControlled(obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == workspaceKind && ref.APIVersion == ergonv1alpha1.GroupVersion.String()
}
