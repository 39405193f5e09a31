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

// Package controllers is what every manager of Ergon's reconcilers shares: the cache (which
// objects it keeps, and how a sharded manager selects them). The reconcilers are a package per
// kind below it (run, gate, scene, trigger, workspace, archive), which never import one
// another; what more than one of them decides is in internal/shared. The specs of this
// package start a manager with all of them against a real API server, because a Run's story
// crosses kinds: its Gates, its Triggers, its Workspace, its archive record.
//
// The manager's own permissions are generated from the kubebuilder:rbac markers of these
// packages into config/rbac/role.yaml. Each reconciler declares what it needs beside its code.
package controllers

// The manager records Events, for leader election now and for its reconcilers later.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
