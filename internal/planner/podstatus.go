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

package planner

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// maxPodMessage bounds a message taken from the kubelet or the scheduler: an image pull's
// error can be long, and the Run keeps it in every attempt's history.
const maxPodMessage = 512

// messageDeleted is the message of a step pod that someone deleted.
const messageDeleted = "the step's pod was deleted before it finished"

// ObservePod reads what the planner needs to know of a step pod from the pod's status as
// the kubelet and the scheduler report it: its phase and attempt, why it does not run yet or
// why it ended, and, for the container named container, its exit code and times. It is pure.
func ObservePod(pod *corev1.Pod, container string) PodState {
	attempt, _ := strconv.Atoi(pod.Labels[ergonv1alpha1.LabelAttempt])
	s := PodState{Name: pod.Name, UID: string(pod.UID), Attempt: int32(attempt), CreatedAt: pod.CreationTimestamp.Time}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			s.ScheduledAt = c.LastTransitionTime.Time
		}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		s.Phase = PodSucceeded
	case corev1.PodFailed:
		s.Phase = PodFailed
	case corev1.PodRunning, corev1.PodUnknown:
		// Unknown is a started pod whose node does not report; the node lifecycle controller
		// deletes it in time, which ends the attempt.
		s.Phase = PodRunning
	default:
		s.Phase = PodPending
	}
	step := containerStatus(pod.Status.ContainerStatuses, container)
	if pod.Status.Phase == corev1.PodRunning && endedOnItsOwn(pod, step) {
		s.Phase = PodSucceeded
	}
	if step != nil {
		if t := step.State.Terminated; t != nil {
			s.ExitCode = &t.ExitCode
			s.StartedAt, s.FinishedAt = t.StartedAt.Time, t.FinishedAt.Time
			if rep, err := wire.ParseReport(t.Message); err == nil {
				s.Frames = rep.Frames()
			}
		} else if r := step.State.Running; r != nil {
			s.StartedAt = r.StartedAt.Time
		}
	}
	switch s.Phase {
	case PodPending:
		s.Reason, s.Message = pendingReason(pod, container)
	case PodFailed:
		s.Reason, s.Message = failedReason(pod, step)
	}
	if pod.DeletionTimestamp != nil {
		s.TerminatingUntil = pod.DeletionTimestamp.Time
		switch {
		case s.Phase == PodPending || s.Phase == PodRunning:
			s.Phase = PodGone
			s.Reason, s.Message = deletedReason(pod)
		case s.Phase == PodFailed && !s.FinishedAt.IsZero() && !s.FinishedAt.Before(deletionRequested(pod)):
			// It failed because it was being deleted: its container ended on the stop signal
			// (an agent reports AgentCancelled). Whether the controller saw the pod before or
			// after it ended must not change why the attempt failed.
			s.Reason, s.Message = deletedReason(pod)
		}
	}
	return s
}

// endedOnItsOwn reports whether a pod the kubelet still calls Running has done its work and
// succeeded: it restarts no container, every container ended with exit code 0, and the
// step's entrypoint reported a command that exited 0 before anyone asked it to stop. The
// kubelet calls a pod Succeeded only once it has stopped the pod's sandbox, one or two of its
// relists (a second each) after the container's end; a step's dependents need not wait for
// that (Tekton ends a TaskRun on its steps' containers the same way). A command stopped by a
// signal (an eviction, a node's shutdown, the pod's deadline, a deletion) is left to the
// kubelet's phase, which says why; so is a container without Ergon's report.
func endedOnItsOwn(pod *corev1.Pod, step *corev1.ContainerStatus) bool {
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || step == nil || step.State.Terminated == nil {
		return false
	}
	for _, c := range pod.Spec.Containers {
		cs := containerStatus(pod.Status.ContainerStatuses, c.Name)
		if c.RestartPolicy != nil || cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	rep, err := wire.ParseReport(step.State.Terminated.Message)
	return err == nil && rep.ExitCode == 0 && !rep.Signaled
}

// deletionRequested is when the pod's deletion began: its deletionTimestamp less the grace
// period the deletion gave it.
func deletionRequested(pod *corev1.Pod) time.Time {
	t := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		t = t.Add(-time.Duration(*g) * time.Second)
	}
	return t
}

// PendingProblem reports whether a reason of a pod that has not started says something is
// wrong, rather than that the pod is on its way.
func PendingProblem(reason string) bool {
	return reason != "" && reason != ergonv1alpha1.ReasonPodStarting
}

func containerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// pendingReason says why a pod that is not running waits: the scheduler's verdict, then a
// waiting init container, then a waiting container; PodStarting when nothing is wrong.
func pendingReason(pod *corev1.Pod, container string) (string, string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return c.Reason, "the pod cannot be scheduled: " + clip(c.Message)
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if w := cs.State.Waiting; w != nil && waitingProblem(w.Reason) {
			return w.Reason, waitingMessage(pod, &cs, true, container)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return ergonv1alpha1.ReasonInitContainerFailed, initFailedMessage(&cs)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && waitingProblem(w.Reason) {
			return w.Reason, waitingMessage(pod, &cs, false, container)
		}
	}
	if pod.Spec.NodeName == "" {
		return ergonv1alpha1.ReasonPodStarting, "the pod waits to be scheduled"
	}
	return ergonv1alpha1.ReasonPodStarting, "the pod is starting on node " + pod.Spec.NodeName
}

// waitingProblem reports whether a container's waiting reason is a problem rather than
// progress.
func waitingProblem(reason string) bool {
	return reason != "" && reason != "ContainerCreating" && reason != "PodInitializing"
}

// waitingMessage says why a container cannot start, naming its image when the image is
// what fails.
func waitingMessage(pod *corev1.Pod, cs *corev1.ContainerStatus, init bool, step string) string {
	w := cs.State.Waiting
	who := "the step's container"
	switch {
	case init:
		who = fmt.Sprintf("Ergon's init container %s", cs.Name)
	case cs.Name != step:
		who = "container " + cs.Name
	}
	switch w.Reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable",
		"SignatureValidationFailed":
		return fmt.Sprintf("the image %q of %s cannot be pulled: %s", specImage(pod, cs, init), who, clip(w.Message))
	case "CreateContainerConfigError":
		// The kubelet names the missing Secret, ConfigMap or key: secret "db" not found.
		return fmt.Sprintf("%s cannot be configured: %s", who, clip(w.Message))
	}
	if w.Message == "" {
		return fmt.Sprintf("%s waits: %s", who, w.Reason)
	}
	return fmt.Sprintf("%s cannot start: %s", who, clip(w.Message))
}

// specImage is the image a container asked for, as its spec says; the status repeats it.
func specImage(pod *corev1.Pod, cs *corev1.ContainerStatus, init bool) string {
	containers := pod.Spec.Containers
	if init {
		containers = pod.Spec.InitContainers
	}
	for _, c := range containers {
		if c.Name == cs.Name {
			return c.Image
		}
	}
	return cs.Image
}

func initFailedMessage(cs *corev1.ContainerStatus) string {
	t := cs.State.Terminated
	msg := fmt.Sprintf("Ergon's init container %s, which copies the entrypoint, exited with code %d", cs.Name, t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" {
		msg += " (" + t.Reason + ")"
	}
	if t.Message != "" {
		msg += ": " + clip(t.Message)
	}
	return msg
}

// failedReason says why a pod failed, most telling first: the pod's own reason (Evicted,
// DeadlineExceeded, ...), a disruption, running out of memory, the init container, the
// report the entrypoint left. Empty when the exit code tells all.
func failedReason(pod *corev1.Pod, step *corev1.ContainerStatus) (string, string) {
	switch pod.Status.Reason {
	case "":
	case ergonv1alpha1.ReasonEvicted:
		return ergonv1alpha1.ReasonEvicted, "the pod was evicted: " + clip(pod.Status.Message)
	default:
		// DeadlineExceeded, and what the kubelet refuses a pod for (OutOfcpu,
		// NodeAffinity, UnexpectedAdmissionError, Terminated for a node shutdown, ...).
		return pod.Status.Reason, clip(pod.Status.Message)
	}
	if reason, message := disruption(pod); reason != "" {
		return reason, message
	}
	if step != nil && step.State.Terminated != nil {
		t := step.State.Terminated
		switch t.Reason {
		case ergonv1alpha1.ReasonOOMKilled:
			return ergonv1alpha1.ReasonOOMKilled, oomMessage(pod, step.Name, t.ExitCode)
		case "ContainerStatusUnknown":
			return t.Reason, clip(t.Message)
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return ergonv1alpha1.ReasonInitContainerFailed, initFailedMessage(&cs)
		}
	}
	if step != nil && step.State.Terminated != nil {
		if rep, err := wire.ParseReport(step.State.Terminated.Message); err == nil {
			switch {
			case rep.Error != "":
				return "", rep.Error
			case rep.Reason != "":
				// The agent runtime knows why it failed: a budget, the output contract.
				return rep.Reason, rep.Message
			}
		}
	}
	return "", ""
}

// oomMessage says that a container ran out of memory, and what its limit was.
func oomMessage(pod *corev1.Pod, container string, exitCode int32) string {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			return fmt.Sprintf("the step ran out of memory: it reached its memory limit of %s and was killed "+
				"(exit code %d); raise resources.limits.memory or make it use less", limit.String(), exitCode)
		}
	}
	return fmt.Sprintf("the step ran out of memory and was killed (exit code %d); it has no memory limit, "+
		"so the node ran short: set resources.requests.memory to what it needs", exitCode)
}

// disruption reads the DisruptionTarget condition Kubernetes sets on a pod it is about to
// end: a node that stopped reporting, a drain, a preemption, a node-pressure eviction.
func disruption(pod *corev1.Pod) (string, string) {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "DeletionByTaintManager":
			return ergonv1alpha1.ReasonNodeLost, fmt.Sprintf("the pod's node %s stopped reporting (or was tainted NoExecute) "+
				"and Kubernetes evicted its pods", orUnknown(pod.Spec.NodeName))
		case "DeletionByPodGC":
			return ergonv1alpha1.ReasonNodeLost, fmt.Sprintf("the pod's node %s no longer exists", orUnknown(pod.Spec.NodeName))
		case "EvictionByEvictionAPI":
			return ergonv1alpha1.ReasonEvicted, "the pod was evicted through the Eviction API, as a node drain does"
		case "PreemptionByScheduler":
			return ergonv1alpha1.ReasonPreempted, "the scheduler preempted the pod to make room for one of higher priority: " + clip(c.Message)
		case "TerminationByKubelet":
			return ergonv1alpha1.ReasonEvicted, "the kubelet ended the pod: " + clip(c.Message)
		}
	}
	return "", ""
}

// deletedReason says why a pod that had not ended is being deleted: a disruption Kubernetes
// names, a lost node, or someone deleting it.
func deletedReason(pod *corev1.Pod) (string, string) {
	if reason, message := disruption(pod); reason != "" {
		return reason, message
	}
	if pod.Status.Reason == ergonv1alpha1.ReasonNodeLost {
		return ergonv1alpha1.ReasonNodeLost, fmt.Sprintf("the pod's node %s stopped reporting", orUnknown(pod.Spec.NodeName))
	}
	return ergonv1alpha1.ReasonPodDeleted, messageDeleted
}

func orUnknown(node string) string {
	if node == "" {
		return "(unknown)"
	}
	return node
}

// clip bounds a message from the cluster, at a rune boundary.
func clip(s string) string {
	if len(s) <= maxPodMessage {
		return s
	}
	cut := maxPodMessage
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
