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

// Package validate is the one home of what makes an Ergon object valid beyond its CRD
// schema: the checks one object decides alone (a Scene's graph, templates, models, tools
// and containers; a Trigger's schedule and mappings; a Workspace's bounds) and, through the
// closure walker, what a Scene's calls decide with the Scenes they reach (cycles, Scenes not
// there yet). It knows no client and no person: the admission webhooks call it with the
// object being admitted, `kubectl ergon lint` with the files it reads, and the Scene
// controller with the Scenes of a namespace, so all three say the same thing in the same
// words. Who may do what (Secrets a Scene reads, Workspaces it binds, who answers a Gate)
// is authority, not validity, and stays with the webhooks and internal/authz.
package validate
