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

// Package shared holds what more than one reconciler must decide the same way: who controls
// an object (ControlledBy, RunControlled), what a name Ergon wanted is held by (CreateOwned,
// StandsFor, TakenBy), how internal state is marked and verified (MarkInternal,
// VerifyInternal), how a Run's snapshot and outputs are read back (RunValues), the field
// indexes every manager registers once (SetupIndexes), and the rule for a namespace that is
// being deleted (QuietWhileNamespaceEnds). The reconcilers import it; it imports none of them.
package shared
