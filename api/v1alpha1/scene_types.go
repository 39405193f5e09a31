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
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Limits of one Scene. They keep a Run, which carries a snapshot of its Scene, well under the
// API server's object size limit, and bound the cost of the CEL rules below.
const (
	// MaxSteps is the largest number of steps in one Scene.
	MaxSteps = 1000
	// MaxParams is the largest number of params in one Scene.
	MaxParams = 64
)

// SceneSpec describes a workflow: a graph of steps and what they need.
//
// The graph is checked where one object suffices: every dependsOn names a step of this Scene.
// Cycles, templates and expressions are checked by the admission webhook.
// +kubebuilder:validation:XValidation:rule="[self.steps.transformMapEntry(i, s, {s.name: true})].all(names, self.steps.all(s, !has(s.dependsOn) || s.dependsOn.all(d, d in names)))",fieldPath=".steps",reason="FieldValueInvalid",message="every dependsOn must name a step of this Scene; add the missing step or fix the name"
type SceneSpec struct {
	// description says what the Scene does, for people reading it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// params are the inputs of the Scene. A Run sets them by name; a param without a default
	// or valueFrom is required. Templates read them as {{ .params.NAME }}, CEL as params.NAME.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Params []ParamSpec `json:"params,omitempty"`

	// models are the chat models agent steps may use, by name. An agent step picks one with
	// its model field, "default" when it names none.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Models map[string]ModelSpec `json:"models,omitempty"`

	// budget bounds the model use of the Scene's Runs; a new Run of a Scene that has spent
	// it fails at start with BudgetExceeded.
	// +optional
	Budget *SceneBudget `json:"budget,omitempty"`

	// memory gives the Scene's agent steps a memory that outlives Runs: what is stored is read
	// into each agent step's context, and the remember tool proposes what to store.
	// +optional
	Memory *SceneMemory `json:"memory,omitempty"`

	// notify sends a signed notification, with a link to the Run, to a channel the cluster's
	// admin defined whenever a Run of the Scene starts waiting for a person: a gate step's Gate
	// or an agent's question opens.
	// +optional
	Notify *SceneNotify `json:"notify,omitempty"`

	// allowHosts are hosts that the http_fetch tool of every agent step of the Scene may reach
	// although they resolve to private addresses, such as in-cluster Services: a host name
	// (tracker.tools.svc) or host:port. An agent step's own allowHosts add to these.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?$`
	// +optional
	AllowHosts []Host `json:"allowHosts,omitempty"`

	// workspace binds the Scene to a Workspace in the same namespace: steps then run against
	// its volume, and agent steps may use the filesystem and shell tools.
	// +optional
	Workspace *corev1.LocalObjectReference `json:"workspace,omitempty"`

	// parallelism is the largest number of step pods of one Run that run at once.
	// Unset means no limit besides the manager's own.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`

	// pendingTimeout is the pendingTimeout of every container and agent step of the Scene
	// that sets none: how long an attempt's pod may take to start running. Unset means the
	// manager's --pending-timeout (10m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="pendingTimeout must be a positive duration such as 5m"
	// +optional
	PendingTimeout *metav1.Duration `json:"pendingTimeout,omitempty"`

	// stepResources are the requests and limits of every container step, and of the pods of
	// container tool calls, that set no resources of their own, and of every agent step that
	// sets none (an agent step bound to a Workspace runs with the Workspace's). Unset, a
	// container step gets the namespace's LimitRange defaults or, where the namespace has none,
	// the manager's --step-default-* values; an agent step gets the agent runtime's own. A
	// request of 0 asks for no request: requests and limits that are all 0 make a BestEffort pod.
	// +optional
	StepResources *corev1.ResourceRequirements `json:"stepResources,omitempty"`

	// steps are the nodes of the graph. Each has exactly one kind: container, agent, gate or
	// scene. A step starts once every step it dependsOn has ended.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +required
	Steps []Step `json:"steps"`

	// finally are steps that run once the graph has ended, whatever its outcome: Succeeded,
	// Failed (a step failed or the Run timed out) or Cancelled. They read .run.phase and
	// .run.failedSteps; their own outcome never changes the Run's. They may depend on each
	// other, not on steps of the graph: they all run after it. See docs/control-flow-outcomes.md.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Finally []Step `json:"finally,omitempty"`

	// finallyTimeout bounds the finally steps together, from when the graph ended, for
	// example 5m; those still running then are stopped. Default 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="finallyTimeout must be a positive duration such as 5m"
	// +optional
	FinallyTimeout *metav1.Duration `json:"finallyTimeout,omitempty"`
}

// ParamSpec declares one input of a Scene.
// +kubebuilder:validation:XValidation:rule="!(has(self.default) && has(self.valueFrom))",message="a param takes its value from default or from valueFrom, not both; remove one"
type ParamSpec struct {
	// name of the param, an identifier usable in templates and CEL: letters, digits and
	// underscores, not starting with a digit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +required
	Name string `json:"name"`

	// description says what the param means.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// default is the value used when a Run does not set the param.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Default *string `json:"default,omitempty"`

	// valueFrom takes the value from a Secret. It is resolved only inside step pods, as an
	// environment variable; it never appears in the Run, its events or its outputs.
	// +optional
	ValueFrom *ParamValueSource `json:"valueFrom,omitempty"`
}

// ParamValueSource says where a param's value comes from.
type ParamValueSource struct {
	// secretKeyRef selects a key of a Secret in the Run's namespace.
	// +required
	SecretKeyRef corev1.SecretKeySelector `json:"secretKeyRef"`
}

// Step is one node of a Scene's graph.
// +kubebuilder:validation:XValidation:rule="[has(self.container), has(self.agent), has(self.gate), has(self.scene)].filter(k, k).size() == 1",message="a step has exactly one kind: set one of container, agent, gate or scene"
// +kubebuilder:validation:XValidation:rule="!has(self.dependsOn) || !(self.name in self.dependsOn)",fieldPath=".dependsOn",reason="FieldValueInvalid",message="a step cannot depend on itself; remove its own name from dependsOn"
type Step struct {
	// name of the step, a DNS-1123 label (lower case letters, digits and '-'), unique in the
	// Scene. Pods, Gates and child Runs of the step are named after it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// dependsOn names the steps that must end before this one starts. The step runs when
	// none of them failed and at least one succeeded (or it has none); otherwise it is Skipped.
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`

	// after names steps that must end before this one starts, each with the outcomes it
	// needs: {step: build, outcomes: [Failed]} runs this step only when build failed (a failure
	// branch). A step may list a dependency in dependsOn or in after, not in both.
	// +listType=map
	// +listMapKey=step
	// +kubebuilder:validation:MaxItems=100
	// +optional
	After []OutcomeDependency `json:"after,omitempty"`

	// when is a CEL expression over params, steps and run; the step is Skipped unless it
	// is true, for example: steps.review.decision == 'approve'.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	When string `json:"when,omitempty"`

	// retry runs a failed step again, each attempt in a new pod.
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`

	// timeout bounds one attempt of the step, for example 15m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="timeout must be a positive duration such as 30s or 15m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// pendingTimeout bounds how long an attempt's pod may take to start running (to be
	// scheduled, pull its images, find its Secrets), for example 5m. An attempt whose pod has
	// not started in time fails with the reason it was waiting for (ImagePullBackOff,
	// Unschedulable, ...), and retry applies. It defaults to the Scene's pendingTimeout, then
	// to the manager's --pending-timeout (10m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="pendingTimeout must be a positive duration such as 5m"
	// +optional
	PendingTimeout *metav1.Duration `json:"pendingTimeout,omitempty"`

	// continueOnFailure lets the Run go on when this step fails after its retries: the step
	// counts as failed for its dependents, but it does not fail the Run.
	// +optional
	ContinueOnFailure bool `json:"continueOnFailure,omitempty"`

	// container runs an image. Its output is what it writes to the file $ERGON_OUTPUT; its
	// exit code decides success.
	// +optional
	Container *ContainerStep `json:"container,omitempty"`

	// agent runs Ergon's agent loop against a chat model, with tools and an output contract.
	// +optional
	Agent *AgentStep `json:"agent,omitempty"`

	// gate waits for a person to decide, through a Gate object.
	// +optional
	Gate *GateStep `json:"gate,omitempty"`

	// scene runs another Scene as a child Run; its output becomes this step's output.
	// +optional
	Scene *SceneCall `json:"scene,omitempty"`

	// forEach fans a container, agent or scene step out over a list, one instance per item.
	// +optional
	ForEach *ForEach `json:"forEach,omitempty"`

	// loop runs a container, agent or scene step again until a condition holds.
	// +optional
	Loop *Loop `json:"loop,omitempty"`

	// artifacts are the files a container step leaves for later steps and for people: each
	// is uploaded to the artifact store when the step's command ends with 0, and a missing
	// one fails the step.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Artifacts []Artifact `json:"artifacts,omitempty"`

	// inputArtifacts are artifacts of earlier steps a container step reads.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	InputArtifacts []InputArtifact `json:"inputArtifacts,omitempty"`
}

// RetryPolicy says how often and when a failed step runs again.
type RetryPolicy struct {
	// limit is the number of retries after the first attempt.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +required
	Limit int32 `json:"limit"`

	// backoff spaces the attempts out; without it a retry starts at once.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is an exponential delay: duration, then duration*factor, ... at most maxDuration.
// +kubebuilder:validation:XValidation:rule=`!has(self.maxDuration) || !has(self.duration) || !self.maxDuration.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") || !self.duration.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") || duration(self.maxDuration) >= duration(self.duration)`,message="maxDuration must not be shorter than duration"
type Backoff struct {
	// duration before the first retry, for example 10s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) >= duration("0s")`,message="duration must be a duration such as 10s"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// factor multiplies the delay after each retry.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	Factor *int32 `json:"factor,omitempty"`

	// maxDuration caps the delay.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) >= duration("0s")`,message="maxDuration must be a duration such as 5m"
	// +optional
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
}

// ContainerStep runs an image as the step's pod.
//
// command is required: Ergon runs it through a small entrypoint of its own that hands the
// output back, and it cannot see an image's ENTRYPOINT without asking its registry.
type ContainerStep struct {
	// image to run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Image string `json:"image"`

	// imagePullPolicy of the container, as in a Pod.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// command to run, as in a Pod; the image's entrypoint is not used. Each item is a
	// template.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +required
	Command []string `json:"command"`

	// args are passed to the command. Each item is a template.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Args []string `json:"args,omitempty"`

	// env sets environment variables; values are templates, secrets come by secretKeyRef.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// envFrom sets environment variables from ConfigMaps and Secrets.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// resources of the container, as in a Pod. Unset, the Scene's stepResources apply, then
	// the namespace's LimitRange defaults, then the manager's --step-default-* values.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// workingDir of the command.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`
}

// GateStep asks a person to decide before the Run goes on.
// +kubebuilder:validation:XValidation:rule="!has(self.onTimeout) || !has(self.options) || self.onTimeout in self.options",fieldPath=".onTimeout",reason="FieldValueInvalid",message="onTimeout must be one of the options"
// +kubebuilder:validation:XValidation:rule="!has(self.onTimeout) || has(self.timeout)",fieldPath=".onTimeout",reason="FieldValueRequired",message="onTimeout needs a timeout; set timeout or remove onTimeout"
type GateStep struct {
	// message shown to the approver, a template.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`

	// options the approver chooses from.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9_-]{0,31}$`
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:default={approve,reject}
	// +optional
	Options []string `json:"options,omitempty"`

	// approvers may decide, besides anyone granted the verb approve on gates by RBAC.
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`

	// minApprovals is how many different people must approve; any rejection decides.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=1
	// +optional
	MinApprovals *int32 `json:"minApprovals,omitempty"`

	// forbidSelfApproval keeps the person who created the Run from deciding its Gate.
	// +optional
	ForbidSelfApproval bool `json:"forbidSelfApproval,omitempty"`

	// timeout after which onTimeout decides.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="timeout must be a positive duration such as 24h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// onTimeout is the option chosen when the timeout passes. On an input Gate, an option
	// other than reject takes the input's defaults (every required field needs one); without
	// onTimeout the step fails when the timeout passes.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_-]{0,31}$`
	// +optional
	OnTimeout string `json:"onTimeout,omitempty"`

	// input asks whoever answers for values, not only an option: a JSON Schema of an object
	// whose fields are strings, numbers, integers, booleans, enums, arrays and nested objects,
	// with titles, descriptions, defaults and bounds (docs/human-input.md). An answer that
	// approves carries values valid against it; they become the step's outputs
	// (.steps.STEP.outputs.FIELD). With minApprovals above one, that many people must give
	// the same values.
	// +kubebuilder:validation:Type=object
	// +optional
	Input *apiextensionsv1.JSON `json:"input,omitempty"`
}

// Approvers lists who may decide a Gate by name, besides RBAC.
type Approvers struct {
	// users by their Kubernetes user name.
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	Users []string `json:"users,omitempty"`

	// groups by their Kubernetes group name.
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// SceneCall runs another Scene of the same namespace as a child Run.
type SceneCall struct {
	// name of the Scene to run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name SceneName `json:"name"`

	// params of the child Run; values are templates.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// SceneStatus is what Ergon observed of a Scene.
type SceneStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions of the Scene: Ready says whether it compiles and everything it names exists.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// stepCount is the number of steps of the Scene.
	// +optional
	StepCount int32 `json:"stepCount,omitempty"`

	// params are the names of the params the Scene takes, in the order it declares them.
	// +listType=atomic
	// +optional
	Params []string `json:"params,omitempty"`

	// calls are the Scenes the Scene calls, each once: through its sub-scene steps (in steps
	// and finally) and as its agent steps' Scene tools.
	// +listType=atomic
	// +optional
	Calls []string `json:"calls,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=scn,categories=ergon
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.stepCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Scene is a workflow definition: a graph of container, agent, gate and sub-scene steps.
// A Run executes it.
type Scene struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the workflow.
	// +required
	Spec SceneSpec `json:"spec"`

	// status is what Ergon observed of the Scene.
	// +optional
	Status SceneStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// SceneList contains a list of Scene
type SceneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Scene `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Scene{}, &SceneList{})
		return nil
	})
}

// SceneNotify names where a Scene's Runs say that they wait for a person.
type SceneNotify struct {
	// channel is one of the notification channels the cluster's admin defined (the manager's
	// --notification-channels); a Scene never names a URL.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Channel string `json:"channel"`
}
