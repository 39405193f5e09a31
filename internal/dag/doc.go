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

// Package dag is the graph a Scene's steps form through dependsOn.
//
// It checks the graph once (unique names, known dependencies, no cycles) and then answers the
// questions a Run's reconciler and the admission webhook ask of it: which steps a step waits
// for, which wait for it, where the graph starts and ends, and an order to run it in. It
// knows nothing about Kubernetes; steps are names and edges.
package dag
