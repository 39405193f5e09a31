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

// Package outputs is the one home of the output contract as Kubernetes sees it: how the Run's
// status describes a step's output or transcript (a preview, its size and SHA-256, and where
// the whole value is kept), how the step's output ConfigMap keeps it, and how the controller,
// the archive, kubectl ergon and the console read it back and check it against what the status
// recorded, so that they all agree on what a value is.
//
// Its subpackage wire is the step pod's half: the report the entrypoint writes into the
// termination message, the frames it prints into the container log, and the limits on what a
// step hands back (wire.MaxSize). It imports no Kubernetes libraries, because the entrypoint
// that uses it is copied into every step pod and must stay small; this package, which does, is
// never linked into the entrypoint.
package outputs
