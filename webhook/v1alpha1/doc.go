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

// Package v1alpha1 holds the admission webhooks of the ergon.dev/v1alpha1 kinds: typed
// validators and defaulters. What makes an object valid is internal/validate's, shared with
// `kubectl ergon lint` and the controllers; what this package adds is what admission alone
// knows: who is asking (identity stamps, RBAC checks of the Secrets, Workspaces and Runs an
// object would use, who may answer a Gate) and how an object may change (immutable fields,
// Gate votes that only grow).
package v1alpha1
