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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// stepPod is a step pod as the Run controller creates it: Ergon's init container and the
// step's container, with the given memory limit ("" for none).
func stepPod(memoryLimit string) *corev1.Pod {
	step := corev1.Container{Name: "step", Image: "ghcr.io/acme/build:1.4"}
	if memoryLimit != "" {
		step.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memoryLimit)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "r-build-2", Labels: map[string]string{ergonv1alpha1.LabelAttempt: "2"},
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "ergon-init", Image: "ergon/manager:dev"}},
			Containers:     []corev1.Container{step},
		},
	}
}

// The shapes below are those the kubelet and the scheduler of Kubernetes 1.3x write.
var (
	initDone = []corev1.ContainerStatus{{Name: "ergon-init", Ready: true, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	scheduled = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	notReady  = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
		Message: "containers with unready status: [step]"}
)

func waiting(name, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "ghcr.io/acme/build:1.4", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func terminated(name string, code int32, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, Message: message,
		StartedAt: metav1.NewTime(t0.Add(time.Second)), FinishedAt: metav1.NewTime(t0.Add(time.Minute))}}}
}

func TestObservePod(t *testing.T) {
	report := func(res wire.Result) string {
		var log strings.Builder
		b, err := wire.WriteResult(&log, res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	deleting := metav1.NewTime(t0.Add(2 * time.Minute))
	// lingering is a pod the kubelet still calls Running after its containers ended, as it
	// does until it has stopped the pod's sandbox.
	lingering := func(p *corev1.Pod, restart corev1.RestartPolicy, statuses ...corev1.ContainerStatus) {
		p.Spec.RestartPolicy = restart
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: initDone, ContainerStatuses: statuses}
	}
	cases := []struct {
		name   string
		pod    func(p *corev1.Pod)
		memory string
		phase  PodPhase
		reason string
		// message must contain each of these.
		message []string
		exit    *int32
	}{
		{
			name:    "a pod no scheduler has looked at waits to be scheduled",
			pod:     func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending },
			phase:   PodPending,
			reason:  ergonv1alpha1.ReasonPodStarting,
			message: []string{"the pod waits to be scheduled"},
		},
		{
			name: "a scheduled pod whose containers are being created is starting",
			pod: func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-1"
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{scheduled, notReady},
					InitContainerStatuses: initDone,
					ContainerStatuses:     []corev1.ContainerStatus{waiting("step", "ContainerCreating", "")}}
			},
			phase:   PodPending,
			reason:  ergonv1alpha1.ReasonPodStarting,
			message: []string{"starting on node worker-1"},
		},
		{
			name: "an unschedulable pod has the scheduler's message",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: " +
						"3 No preemption victims found for incoming pod.",
				}}}
			},
			phase:   PodPending,
			reason:  ergonv1alpha1.ReasonUnschedulable,
			message: []string{"cannot be scheduled", "0/3 nodes are available: 3 Insufficient memory"},
		},
		{
			name: "an image that cannot be pulled is named, back-off",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{scheduled, notReady},
					InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "ImagePullBackOff",
						`Back-off pulling image "ghcr.io/acme/build:1.4"`)}}
			},
			phase:   PodPending,
			reason:  "ImagePullBackOff",
			message: []string{`the image "ghcr.io/acme/build:1.4" of the step's container cannot be pulled`, "Back-off pulling image"},
		},
		{
			name: "an image that cannot be pulled is named, first error",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "ErrImagePull",
						`failed to pull and unpack image "ghcr.io/acme/build:1.4": failed to resolve reference `+
							`"ghcr.io/acme/build:1.4": ghcr.io/acme/build:1.4: not found`)}}
			},
			phase:   PodPending,
			reason:  "ErrImagePull",
			message: []string{`the image "ghcr.io/acme/build:1.4"`, "not found"},
		},
		{
			name: "Ergon's own image that cannot be pulled is told apart from the step's",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					waiting("ergon-init", "ImagePullBackOff", `Back-off pulling image "ergon/manager:dev"`)},
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "PodInitializing", "")}}
			},
			phase:   PodPending,
			reason:  "ImagePullBackOff",
			message: []string{`the image "ergon/manager:dev" of Ergon's init container ergon-init cannot be pulled`},
		},
		{
			name: "a missing Secret is named",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "CreateContainerConfigError", `secret "db-creds" not found`)}}
			},
			phase:   PodPending,
			reason:  "CreateContainerConfigError",
			message: []string{`the step's container cannot be configured: secret "db-creds" not found`},
		},
		{
			name: "a missing key of a Secret is named",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "CreateContainerConfigError",
						"couldn't find key password in Secret team-a/db-creds")}}
			},
			phase:   PodPending,
			reason:  "CreateContainerConfigError",
			message: []string{"couldn't find key password in Secret team-a/db-creds"},
		},
		{
			name: "an init container that failed, still Pending",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					terminated("ergon-init", 1, "Error", "cp: can't create '/ergon/bin/entrypoint': Read-only file system")}}
			},
			phase:   PodPending,
			reason:  ergonv1alpha1.ReasonInitContainerFailed,
			message: []string{"ergon-init", "exited with code 1", "Read-only file system"},
		},
		{
			name: "an init container that failed fails the pod",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{
					terminated("ergon-init", 126, "ContainerCannotRun", "exec: \"/ergon-entrypoint\": permission denied")},
					ContainerStatuses: []corev1.ContainerStatus{waiting("step", "PodInitializing", "")}}
			},
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonInitContainerFailed,
			message: []string{"exited with code 126 (ContainerCannotRun)", "permission denied"},
		},
		{
			name: "a step out of memory names its limit",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 137, "OOMKilled", "")}}
			},
			memory:  "64Mi",
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonOOMKilled,
			message: []string{"ran out of memory", "memory limit of 64Mi", "exit code 137"},
			exit:    new(int32(137)),
		},
		{
			name: "out of memory wins over the entrypoint's report of exit 137",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 137, "OOMKilled",
						report(wire.Result{ExitCode: 137}))}}
			},
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonOOMKilled,
			message: []string{"it has no memory limit"},
			exit:    new(int32(137)),
		},
		{
			name: "an evicted pod says why the kubelet evicted it",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
					Message: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91572Ki. ",
					Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
						Reason: "TerminationByKubelet", Message: "The node was low on resource: memory."}},
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 137, "ContainerStatusUnknown", "")}}
			},
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonEvicted,
			message: []string{"the pod was evicted: The node was low on resource: memory"},
			exit:    new(int32(137)),
		},
		{
			name: "a pod past its deadline keeps the kubelet's reason",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded",
					Message: "Pod was active on the node longer than the specified deadline"}
			},
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonDeadlineExceeded,
			message: []string{"longer than the specified deadline"},
		},
		{
			name: "a failed command is told by its exit code",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 2, "Error", report(wire.Result{ExitCode: 2}))}}
			},
			phase: PodFailed,
			exit:  new(int32(2)),
		},
		{
			name: "the agent runtime's reason is kept",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: initDone,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 1, "Error", report(wire.Result{
						ExitCode: 1, Reason: "MaxTurnsExceeded", Message: "the model used its 20 turns"}))}}
			},
			phase:   PodFailed,
			reason:  "MaxTurnsExceeded",
			message: []string{"the model used its 20 turns"},
			exit:    new(int32(1)),
		},
		{
			name: "a running pod someone deletes is gone",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
					Name: "step", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
			},
			phase:   PodGone,
			reason:  ergonv1alpha1.ReasonPodDeleted,
			message: []string{"deleted before it finished"},
		},
		{
			name: "a pod on a node that stopped reporting is lost with its node",
			pod: func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-2"
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
					Message: "Taint manager: deleting due to NoExecute taint"}}}
			},
			phase:   PodGone,
			reason:  ergonv1alpha1.ReasonNodeLost,
			message: []string{"node worker-2 stopped reporting"},
		},
		{
			name: "a pod whose node was deleted is lost with it",
			pod: func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-3"
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC",
					Message: "PodGC: node no longer exists"}}}
			},
			phase:   PodGone,
			reason:  ergonv1alpha1.ReasonNodeLost,
			message: []string{"node worker-3 no longer exists"},
		},
		{
			name: "a pod a drain evicts is evicted",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
					Message: "Eviction API: evicting"}}}
			},
			phase:   PodGone,
			reason:  ergonv1alpha1.ReasonEvicted,
			message: []string{"Eviction API"},
		},
		{
			name: "a preempted pod says so",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler",
					Message: "default-scheduler: preempting to accommodate a higher priority pod"}}}
			},
			phase:   PodGone,
			reason:  ergonv1alpha1.ReasonPreempted,
			message: []string{"higher priority"},
		},
		{
			name: "a failed pod being cleaned up stays failed with its reason",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = &deleting
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 137, "OOMKilled", "")}}
			},
			phase:  PodFailed,
			reason: ergonv1alpha1.ReasonOOMKilled,
			exit:   new(int32(137)),
		},
		{
			name: "a pod that fails on the stop signal of its deletion was deleted, whatever it reports",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, new(int64(30)) // deleted at 1m30s
				stopped := terminated("step", 3, "Error", report(wire.Result{ExitCode: 3,
					Reason: "AgentCancelled", Message: "the agent was stopped: terminated"}))
				stopped.State.Terminated.FinishedAt = metav1.NewTime(t0.Add(105 * time.Second))
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{stopped}}
			},
			phase:   PodFailed,
			reason:  ergonv1alpha1.ReasonPodDeleted,
			message: []string{"deleted before it finished"},
			exit:    new(int32(3)),
		},
		{
			name: "a pod that failed before someone deleted it keeps its own reason",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, new(int64(30))
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					terminated("step", 1, "Error", report(wire.Result{ExitCode: 1,
						Reason: "MaxTurnsExceeded", Message: "the model used its 20 turns"}))}} // ended at 1m
			},
			phase:   PodFailed,
			reason:  "MaxTurnsExceeded",
			message: []string{"the model used its 20 turns"},
			exit:    new(int32(1)),
		},
		{
			name: "a succeeded pod is succeeded",
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded,
					ContainerStatuses: []corev1.ContainerStatus{terminated("step", 0, "Completed", report(wire.Result{}))}}
			},
			phase: PodSucceeded,
			exit:  new(int32(0)),
		},
		// The kubelet keeps a pod Running until it has stopped its sandbox, a second or two
		// after the containers ended; these are the statuses it writes in between.
		{
			name: "a pod whose command ended on its own with exit code 0 has succeeded before the kubelet says so",
			pod: func(p *corev1.Pod) {
				lingering(p, corev1.RestartPolicyNever, terminated("step", 0, "Completed", report(wire.Result{Output: []byte("ok")})))
			},
			phase: PodSucceeded,
			exit:  new(int32(0)),
		},
		{
			name: "a pod whose command exited 0 when asked to stop waits for the kubelet's phase",
			pod: func(p *corev1.Pod) {
				lingering(p, corev1.RestartPolicyNever, terminated("step", 0, "Completed", report(wire.Result{Signaled: true})))
			},
			phase: PodRunning,
			exit:  new(int32(0)),
		},
		{
			name: "a pod whose command failed waits for the kubelet's phase and reason",
			pod: func(p *corev1.Pod) {
				lingering(p, corev1.RestartPolicyNever, terminated("step", 2, "Error", report(wire.Result{ExitCode: 2})))
			},
			phase: PodRunning,
			exit:  new(int32(2)),
		},
		{
			name: "a pod whose container left no report of Ergon's waits for the kubelet's phase",
			pod: func(p *corev1.Pod) {
				lingering(p, corev1.RestartPolicyNever, terminated("step", 0, "Completed", ""))
			},
			phase: PodRunning,
			exit:  new(int32(0)),
		},
		{
			name: "a pod with another container still running has not succeeded",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "proxy:1"})
				lingering(p, corev1.RestartPolicyNever, terminated("step", 0, "Completed", report(wire.Result{})),
					corev1.ContainerStatus{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
			},
			phase: PodRunning,
			exit:  new(int32(0)),
		},
		{
			name: "a pod that restarts its containers has not succeeded when one ends",
			pod: func(p *corev1.Pod) {
				lingering(p, corev1.RestartPolicyOnFailure, terminated("step", 0, "Completed", report(wire.Result{})))
			},
			phase: PodRunning,
			exit:  new(int32(0)),
		},
		{
			name: "a pod deleted after its command succeeded stays succeeded",
			pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = &deleting
				lingering(p, corev1.RestartPolicyNever, terminated("step", 0, "Completed", report(wire.Result{})))
			},
			phase: PodSucceeded,
			exit:  new(int32(0)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := stepPod(tc.memory)
			tc.pod(pod)
			got := ObservePod(pod, "step")
			if got.Phase != tc.phase || got.Reason != tc.reason {
				t.Fatalf("phase %s reason %q, want %s %q (message %q)", got.Phase, got.Reason, tc.phase, tc.reason, got.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q does not contain %q", got.Message, m)
				}
			}
			if (got.ExitCode == nil) != (tc.exit == nil) || (tc.exit != nil && *got.ExitCode != *tc.exit) {
				t.Errorf("exit code %v, want %v", got.ExitCode, tc.exit)
			}
			if got.Name != "r-build-2" || got.Attempt != 2 || !got.CreatedAt.Equal(t0) {
				t.Errorf("name %s attempt %d created %s", got.Name, got.Attempt, got.CreatedAt)
			}
			if pod.DeletionTimestamp != nil && !got.TerminatingUntil.Equal(deleting.Time) {
				t.Errorf("terminating until %s, want %s", got.TerminatingUntil, deleting.Time)
			}
		})
	}
}

func TestAKubeletMessageIsClipped(t *testing.T) {
	pod := stepPod("")
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
		waiting("step", "ErrImagePull", strings.Repeat("é", 2000))}}
	got := ObservePod(pod, "step")
	if len(got.Message) > 700 || !strings.HasSuffix(got.Message, "…") || !strings.Contains(got.Message, "é") {
		t.Fatalf("message of %d bytes: %q", len(got.Message), got.Message[len(got.Message)-20:])
	}
}
