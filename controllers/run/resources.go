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

package run

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/podsecurity"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// The pieces of a step pod.
const (
	initContainer = "ergon-init"
	// annotationInputPrefix holds small inputs on the pod, for the downward API to project.
	annotationInputPrefix = "inputs.ergon.dev/"
	entrypointPath        = stepcontract.BinDir + "/entrypoint"
	// binVolume holds what the init container copies in; entrypointRun is the entrypoint's
	// subcommand that runs a step's program.
	binVolume     = "ergon-bin"
	entrypointRun = "run"
	// EntrypointInImage is where Ergon's image keeps the entrypoint binary.
	EntrypointInImage = "/ergon-entrypoint"
	// stepUID is the user step containers run as unless their image says otherwise.
	stepUID = 65532
)

// ownerRef makes a Run the controlling owner of a child.
func ownerRef(run *ergonv1alpha1.Run) metav1.OwnerReference {
	return *metav1.NewControllerRef(run, ergonv1alpha1.GroupVersion.WithKind(shared.KindRun))
}

func childLabels(run *ergonv1alpha1.Run, step string) map[string]string {
	l := map[string]string{
		ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon,
		ergonv1alpha1.LabelRun:       naming.LabelValue(run.Name),
	}
	if step != "" {
		l[ergonv1alpha1.LabelStep] = step
	}
	return l
}

func emptyDir(name, size string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse(size))},
	}}
}

// podParts are what building a pod needs besides the Run, its Scene and the request: read
// once for all the plan's pods (RunReconciler.podParts), so that each pod is built whole, in
// one function of its kind, and nothing edits it afterwards.
type podParts struct {
	bins ergonBinaries
	// workspace is the Workspace the Scene binds, nil for none; node is the node its pod
	// runs on ("" when it does not run), where the step pods bound to it must run too.
	workspace *ergonv1alpha1.Workspace
	node      string
	// schemas are the params schemas of the Scenes that the agent steps' Scene tools call,
	// by name; a Scene that does not exist yet has none, and its tool takes any object.
	schemas map[string]json.RawMessage
	// defaults are the resources a container step or tool call that sets none gets: the
	// manager's, nil where a LimitRange of the namespace gives containers defaults.
	defaults *corev1.ResourceRequirements
	// traced is set when the manager exports traces: each step pod then carries its
	// attempt's span as TRACEPARENT, so that what the step's program traces joins the Run's.
	traced bool
	// artifacts is how step pods reach the artifact endpoint; nil when the manager keeps none.
	artifacts *ArtifactsConfig
}

// sceneSchema is the params schema a Scene tool's calls are checked against.
func (p podParts) sceneSchema(scene string) json.RawMessage {
	if s, ok := p.schemas[scene]; ok {
		return s
	}
	return json.RawMessage(`{"type":"object"}`)
}

// stepPod builds the pod of one attempt of a step: an agent step's (agentPod) or a container
// step's, bound to the Scene's Workspace when it has one. The user's command runs under
// Ergon's entrypoint, out of Ergon's image (StepBinaries), which hands the output back through
// the termination message or the log: the pod has no credentials and needs none.
func stepPod(run *ergonv1alpha1.Run, scene *compile.Scene, req planner.PodRequest, parts podParts) *corev1.Pod {
	var pod *corev1.Pod
	if req.Step.Spec.Agent != nil {
		pod = agentPod(run, scene, req, parts)
	} else {
		pod = containerPod(run, scene, req, parts)
	}
	if parts.workspace != nil {
		bindToWorkspace(pod, req.Step, parts.workspace, parts.node, parts.bins)
	}
	addArtifacts(pod, req.Step, parts.artifacts, parts.bins)
	if parts.traced {
		// First, so that a step's own env may set another.
		main := &pod.Spec.Containers[0]
		span := tracing.AttemptContext(run, req.Step.Name, req.Attempt)
		if u := req.Unit; u != nil {
			span = tracing.UnitAttemptContext(run, req.Step.Name, u.Index, u.Iteration, req.Attempt)
		}
		traceparent := corev1.EnvVar{Name: stepcontract.EnvTraceparent, Value: tracing.Traceparent(span)}
		main.Env = append([]corev1.EnvVar{traceparent}, main.Env...)
	}
	return pod
}

// containerPod builds the pod of one attempt of a container step.
func containerPod(run *ergonv1alpha1.Run, scene *compile.Scene, req planner.PodRequest, parts podParts) *corev1.Pod {
	c := req.Step.Spec.Container
	pod := basePod(run, req)
	main := &pod.Spec.Containers[0]
	// Params come before the step's own env, which may name them as $(ERGON_PARAM_NAME); a
	// secret param only to a step that names it.
	for _, p := range req.Step.SecretParams {
		main.Env = append(main.Env, corev1.EnvVar{Name: compile.SecretParamEnv(p.Name), ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: p.ValueFrom.SecretKeyRef.DeepCopy(),
		}})
	}
	main.Env = append(main.Env, req.Rendered.ParamEnv...)
	main.Env = append(main.Env, req.Rendered.Env...)
	main.Image, main.ImagePullPolicy = c.Image, c.ImagePullPolicy
	entrypoint, _ := parts.bins.add(pod, main, false)
	main.Command = []string{entrypoint}
	main.Args = append(append([]string{entrypointRun, "--"}, req.Rendered.Command...), req.Rendered.Args...)
	main.EnvFrom, main.WorkingDir = c.EnvFrom, c.WorkingDir
	main.Resources = defaultedResources(c.Resources, sceneStepResources(scene), parts.defaults)
	return pod
}

// StepBinaries is how step pods get Ergon's entrypoint (and, in a Workspace's image, the agent
// runtime) out of Ergon's image.
type StepBinaries string

const (
	// BinariesCopy copies them into an emptyDir with an init container. It works on every
	// cluster, at the cost of one more container start per step pod.
	BinariesCopy StepBinaries = "copy"
	// BinariesImageVolume mounts Ergon's image read-only as an image volume (volumes[].image):
	// no init container. It needs Kubernetes 1.35 or later (the ImageVolume feature, on by
	// default since) and a runtime that supports it (containerd 2.1, CRI-O 1.31).
	BinariesImageVolume StepBinaries = "image-volume"
)

// imageVolumesByDefault is the first Kubernetes minor version whose ImageVolume feature is on
// by default.
const imageVolumesByDefault = 35

// ResolveStepBinaries reads the manager's --step-binaries: image-volume, copy, or auto, which
// picks image-volume for an API server of version (a GitVersion such as v1.35.4) 1.35 or later.
func ResolveStepBinaries(mode, version string) (StepBinaries, error) {
	switch StepBinaries(mode) {
	case BinariesCopy, BinariesImageVolume:
		return StepBinaries(mode), nil
	case "auto":
		var major, minor int
		if _, err := fmt.Sscanf(version, "v%d.%d", &major, &minor); err != nil {
			return "", fmt.Errorf("--step-binaries=auto: cannot read the API server's version %q", version)
		}
		if major > 1 || (major == 1 && minor >= imageVolumesByDefault) {
			return BinariesImageVolume, nil
		}
		return BinariesCopy, nil
	}
	return "", fmt.Errorf("--step-binaries must be image-volume, copy or auto, not %q", mode)
}

// ergonBinaries is where step pods get Ergon's binaries from, and how.
type ergonBinaries struct {
	Image string
	Mode  StepBinaries
}

// add puts Ergon's binaries into a step pod for container c, mounted read-only at
// stepcontract.BinDir, and returns the paths of the entrypoint and of the agent runtime there
// (agent is empty unless withAgent).
func (b ergonBinaries) add(pod *corev1.Pod, c *corev1.Container, withAgent bool) (entrypoint, agent string) {
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: binVolume, MountPath: stepcontract.BinDir, ReadOnly: true})
	if b.Mode == BinariesImageVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: binVolume, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: b.Image, PullPolicy: corev1.PullIfNotPresent},
		}})
		entrypoint = stepcontract.BinDir + EntrypointInImage
		if withAgent {
			agent = stepcontract.BinDir + AgentInImage
		}
		return entrypoint, agent
	}
	size, files := "64Mi", []string(nil)
	if withAgent {
		size, agent = "128Mi", agentPath
		files = []string{AgentInImage + "=" + agentPath}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, emptyDir(binVolume, size))
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, copyInit(b.Image, files...))
	return entrypointPath, agent
}

// basePod is what the pods of container and agent steps share: names, labels and owner; no
// credentials, the restricted Pod Security profile, no restarts; the step container with the
// step contract's variables, its output and /tmp volumes and its inputs; the step's timeout as
// the pod's deadline. The callers add the image, command and what their kind needs.
func basePod(run *ergonv1alpha1.Run, req planner.PodRequest) *corev1.Pod {
	labels := childLabels(run, req.Step.Name)
	labels[ergonv1alpha1.LabelAttempt] = strconv.Itoa(int(req.Attempt))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: run.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef(run)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(false),
			EnableServiceLinks:           new(false),
			SecurityContext:              podsecurity.Pod(stepUID),
			Volumes:                      []corev1.Volume{emptyDir("ergon-output", "8Mi"), emptyDir("tmp", "256Mi")},
			Containers: []corev1.Container{{
				Name: shared.StepContainer,
				Env: []corev1.EnvVar{
					{Name: stepcontract.EnvOutput, Value: stepcontract.OutputFile},
					{Name: stepcontract.EnvRun, Value: run.Name},
					{Name: stepcontract.EnvStep, Value: req.Step.Name},
					{Name: stepcontract.EnvAttempt, Value: strconv.Itoa(int(req.Attempt))},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "ergon-output", MountPath: stepcontract.OutputDir},
					{Name: "tmp", MountPath: "/tmp"},
				},
				SecurityContext:          podsecurity.Container(),
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
		},
	}
	addInputs(pod, req.Inputs)
	if t := req.Step.Spec.Timeout; t != nil {
		pod.Spec.ActiveDeadlineSeconds = new(max(int64(t.Seconds()), 1))
	}
	return pod
}

// copyInit is the init container that copies Ergon's entrypoint, and any SRC=DEST files of
// Ergon's image, into a step pod's /ergon/bin.
func copyInit(ergonImage string, files ...string) corev1.Container {
	return corev1.Container{
		Name: initContainer, Image: ergonImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         append([]string{EntrypointInImage, "copy", entrypointPath}, files...),
		VolumeMounts:    []corev1.VolumeMount{{Name: binVolume, MountPath: stepcontract.BinDir}},
		SecurityContext: podsecurity.Container(),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}

// addInputs hands the outputs of the step's dependencies to the pod as files under
// /ergon/inputs, one per dependency: from the ConfigMap that keeps a large output, or from an
// annotation of the pod for a small one. The kubelet projects both; the pod needs no access to
// the API. Large outputs reach a step this way, where a template would exceed the kernel's
// limit on one argument or environment variable (128 KiB).
func addInputs(pod *corev1.Pod, inputs []planner.Input) {
	if len(inputs) == 0 {
		return
	}
	var sources []corev1.VolumeProjection
	var inline []corev1.DownwardAPIVolumeFile
	for _, in := range inputs {
		if in.Ref != nil {
			sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: in.Ref.ConfigMap},
				Items:                []corev1.KeyToPath{{Key: in.Ref.Key, Path: in.Step}},
			}})
			continue
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[annotationInputPrefix+in.Step] = in.Value
		inline = append(inline, corev1.DownwardAPIVolumeFile{Path: in.Step, FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + annotationInputPrefix + in.Step + "']",
		}})
	}
	if len(inline) > 0 {
		sources = append(sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: inline}})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "ergon-inputs", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: sources},
	}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ergon-inputs", MountPath: stepcontract.InputsDir, ReadOnly: true})
	c.Env = append(c.Env, corev1.EnvVar{Name: stepcontract.EnvInputs, Value: stepcontract.InputsDir})
}

// childRun builds the Run of a scene step, created by the person behind its parent, one
// deeper in its parent's cause.
func childRun(parent *ergonv1alpha1.Run, req planner.ChildRequest, depth int) *ergonv1alpha1.Run {
	labels := childLabels(parent, "")
	delete(labels, ergonv1alpha1.LabelRun)
	labels[ergonv1alpha1.LabelParentRun] = naming.LabelValue(parent.Name)
	labels[ergonv1alpha1.LabelScene] = naming.LabelValue(req.Scene)
	c := cause.Of(parent)
	c.Depth = depth
	next := c.Next()
	annotations := map[string]string{ergonv1alpha1.AnnotationDepth: strconv.Itoa(next.Depth),
		ergonv1alpha1.AnnotationCauseRoot: next.Root}
	for _, key := range []string{ergonv1alpha1.AnnotationCreatedBy, ergonv1alpha1.AnnotationIdentity} {
		if v := parent.Annotations[key]; v != "" {
			annotations[key] = v
		}
	}
	return &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: parent.Namespace, Labels: labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{ownerRef(parent)},
		},
		Spec: ergonv1alpha1.RunSpec{
			SceneRef: corev1.LocalObjectReference{Name: req.Scene},
			Params:   req.Params,
		},
	}
}

// gateFor builds the Gate of a gate step.
func gateFor(run *ergonv1alpha1.Run, req planner.GateRequest) *ergonv1alpha1.Gate {
	g := req.Step.Spec.Gate
	return &ergonv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: run.Namespace, Labels: childLabels(run, req.Step.Name),
			OwnerReferences: []metav1.OwnerReference{ownerRef(run)},
		},
		Spec: ergonv1alpha1.GateSpec{
			RunRef: corev1.LocalObjectReference{Name: run.Name}, Step: req.Step.Name,
			Message: req.Message, Options: g.Options, Approvers: g.Approvers.DeepCopy(),
			MinApprovals: g.MinApprovals, ForbidSelfApproval: g.ForbidSelfApproval,
			Timeout: g.Timeout, OnTimeout: g.OnTimeout, Input: g.Input.DeepCopy(),
		},
	}
}

// outputConfigMap keeps a step's whole output and, for an agent step, its transcript
// (outputs.ConfigMap), as internal state of the Run.
func outputConfigMap(run *ergonv1alpha1.Run, step, value, transcript string) *corev1.ConfigMap {
	cm := outputs.ConfigMap(run, step, value, transcript)
	cm.Labels = childLabels(run, step)
	cm.OwnerReferences = []metav1.OwnerReference{ownerRef(run)}
	return shared.MarkInternal(cm)
}
