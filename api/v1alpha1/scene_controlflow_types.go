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

package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Limits of fan-out and loops. They keep a Run's status small: instances and iterations are
// recorded compactly, and their outputs live in ConfigMaps.
const (
	// MaxForEachItems is the largest number of instances of one step.
	MaxForEachItems = 1000
	// MaxLoopIterations is the largest maxIterations of a loop.
	MaxLoopIterations = 500
	// MaxMatrixAxes is the largest number of axes of a matrix.
	MaxMatrixAxes = 4
)

// ForEach runs a step once per item of a list, each run an instance <step>-<index> that sees
// its item as {{ .item }} (and {{ .item.KEY }} for an object). Exactly one of items, param,
// expression and matrix says where the list comes from. Later steps see the instances'
// outputs, in item order, as one JSON array: .steps.STEP.output is its text, .steps.STEP.outputs
// (CEL: steps.STEP.outputs) the list itself. An empty list skips the step.
type ForEach struct {
	// items is a literal list; each item is any JSON value. At most 1,000.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Items *apiextensionsv1.JSON `json:"items,omitempty"`

	// param names a param whose value is a JSON array, for example ["a","b"].
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +optional
	Param string `json:"param,omitempty"`

	// expression is a CEL expression over params, steps and run that yields a list, for
	// example steps.plan.outputs.files. It may read only steps this step depends on.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Expression string `json:"expression,omitempty"`

	// matrix runs one instance per combination of its axes' items, the first axis varying
	// slowest; .item.AXIS is the axis' value.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	// +optional
	Matrix []MatrixAxis `json:"matrix,omitempty"`

	// parallelism is the largest number of this step's instances that run at once, within the
	// Scene's parallelism. Unset means no limit of its own.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`
}

// MatrixAxis is one list of a matrix.
type MatrixAxis struct {
	// name of the axis, read as .item.NAME.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +required
	Name string `json:"name"`

	// items of the axis, any JSON values. An axis needs at least one.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Items *apiextensionsv1.JSON `json:"items"`
}

// LoopExhausted says how a loop that ran maxIterations without until turning true ends.
// +kubebuilder:validation:Enum=fail;succeed
type LoopExhausted string

// Ways a loop ends when it runs out of iterations.
const (
	LoopExhaustedFail    LoopExhausted = "fail"
	LoopExhaustedSucceed LoopExhausted = "succeed"
)

// Loop runs a step (a container, agent or scene step) again and again, each iteration in a
// new pod or child Run, until a condition over the iteration's output holds. Each iteration
// sees {{ .loop.iteration }} (from 1) and {{ .loop.previous }} (the output of the one before,
// "" for the first). The output of the last iteration is the step's output.
type Loop struct {
	// until is a CEL expression evaluated after each iteration that succeeded; the loop ends
	// when it is true. It sees output (the iteration's output, a string), outputs (its JSON
	// value, when it is JSON), iteration (from 1), previous (the previous iteration's output),
	// item (in a fan-out), params, steps and run, for example outputs.verdict == 'pass'.
	// Admission requires it.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Until string `json:"until,omitempty"`

	// maxIterations bounds the iterations, from 1 to 500. Admission requires it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +optional
	MaxIterations int32 `json:"maxIterations,omitempty"`

	// onExhausted decides how the step ends after maxIterations iterations without until
	// being true: fail (the default, reason MaxIterationsExceeded) or succeed with the last
	// iteration's output.
	// +kubebuilder:default=fail
	// +optional
	OnExhausted LoopExhausted `json:"onExhausted,omitempty"`
}
