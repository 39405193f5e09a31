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

// Package run reconciles Runs. A pass gathers what exists (gather.go), asks internal/planner
// what to do, does it (act.go: creates, updates and deletes, no reads) and writes the Run's
// status once. Pods, child Runs, Gates and the ConfigMaps of a step's internal state are its
// children; what it shares with the other reconcilers is in controllers/internal/shared.
package run
