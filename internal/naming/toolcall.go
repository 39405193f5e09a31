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

package naming

// ToolCallName names what the Run controller creates for one tool call an agent step hands
// over — the call's child Run, its Gate, or both, which are of different kinds:
// <run>-<step>-<hash>, where the hash covers the Run, the step and the call's id, so a
// manager that fulfils the call twice finds what it created the first time. It is kept to 63
// characters so it can be a label value.
func ToolCallName(run, step, callID string) string {
	return unique(MaxLabelLength, []string{run, step}, "toolcall", run, step, callID)
}

// ToolResultsConfigMapName names the ConfigMap that holds the results of the tool calls an
// agent step handed over, which its next attempt reads: <run>-<step>-toolresults-<hash>.
func ToolResultsConfigMapName(run, step string) string {
	return unique(MaxSubdomainLength, []string{run, step, "toolresults"}, "toolresults", run, step)
}
