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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// ArtifactsConfig is how step pods reach the manager's artifact endpoint (docs/artifacts.md).
type ArtifactsConfig struct {
	// Endpoint is the endpoint's URL as step pods reach it (https://SERVICE.NAMESPACE.svc).
	Endpoint string
	// CA returns the PEM of the CA step pods trust the endpoint's certificate by.
	CA func() string
	// Address returns the endpoint's address (its Service's cluster IP), "" while unknown:
	// step pods then reach it by address, with the name for its certificate, so that a pod
	// that may not look names up (a Workspace's egress) reaches it too.
	Address func() string
	// MaxBytes bounds one artifact, RunBytes the artifacts of one Run.
	MaxBytes, RunBytes int64
	// Store is where artifacts live: a rerun copies the artifacts of the steps it reuses
	// (retry.go). Nil when the store cannot be reached from here (tests of other parts).
	Store *store.Store
}

// ArtifactsInImage is where Ergon's image keeps its artifact binary (cmd/artifacts), which
// the entrypoint finds beside itself.
const ArtifactsInImage = "/ergon-artifacts"

// artifactTokenSeconds is how long the pod's artifact token lasts: the least the API server
// issues. The kubelet renews it at 80% of that.
const artifactTokenSeconds = 600

// addArtifacts gives the pod of a step that makes or reads artifacts what its entrypoint needs
// for them: the directories, the spec of what to write and read and where, the endpoint and
// its CA, and a token for the endpoint only (audience artifacts.Audience), bound to the pod.
// The token is no Kubernetes credential: the API server refuses a token of another audience.
// Without an endpoint (the manager keeps no artifacts) the entrypoint fails the step and says so.
func addArtifacts(pod *corev1.Pod, step *compile.Step, cfg *ArtifactsConfig, bins ergonBinaries) {
	spec := step.Spec
	if len(spec.Artifacts) == 0 && len(spec.InputArtifacts) == 0 {
		return
	}
	var ps artifacts.PodSpec
	for _, a := range spec.Artifacts {
		file := a.Path
		if file == "" {
			file = path.Join(stepcontract.ArtifactsDir, a.Name)
		}
		ps.Put = append(ps.Put, artifacts.PodFile{Name: a.Name, Path: file})
	}
	for _, in := range spec.InputArtifacts {
		ps.Get = append(ps.Get, artifacts.PodFile{Step: in.Step, Name: in.Name, Path: inputArtifactPath(in)})
	}
	raw, _ := json.Marshal(ps)
	// The entrypoint runs Ergon's artifact binary from beside itself: in the image volume,
	// or copied by the init container.
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; bins.Mode != BinariesImageVolume && c.Name == initContainer {
			c.Command = append(c.Command, ArtifactsInImage+"="+stepcontract.BinDir+ArtifactsInImage)
		}
	}
	main := &pod.Spec.Containers[0]
	main.Env = append(main.Env,
		corev1.EnvVar{Name: stepcontract.EnvArtifacts, Value: stepcontract.ArtifactsDir},
		corev1.EnvVar{Name: stepcontract.EnvInputArtifacts, Value: stepcontract.InputArtifactsDir},
		corev1.EnvVar{Name: stepcontract.EnvArtifactSpec, Value: string(raw)},
		corev1.EnvVar{Name: stepcontract.EnvArtifactToken, Value: stepcontract.ArtifactTokenFile})
	if cfg != nil {
		endpoint := cfg.Endpoint
		if u, err := url.Parse(endpoint); err == nil && cfg.Address != nil {
			if addr := cfg.Address(); addr != "" {
				main.Env = append(main.Env, corev1.EnvVar{Name: stepcontract.EnvArtifactServerName, Value: u.Hostname()})
				port := u.Port()
				if port == "" {
					port = "443"
				}
				u.Host = net.JoinHostPort(addr, port)
				endpoint = u.String()
			}
		}
		main.Env = append(main.Env, corev1.EnvVar{Name: stepcontract.EnvArtifactEndpoint, Value: endpoint})
		if cfg.CA != nil {
			main.Env = append(main.Env, corev1.EnvVar{Name: stepcontract.EnvArtifactCA, Value: cfg.CA()})
		}
	}
	// The token is the namespace's default ServiceAccount's, which the API server's
	// admission names for every pod anyway (and the pod mounts no token of it).
	pod.Spec.ServiceAccountName = "default"
	// The directories hold what the step writes and reads: bounded by the artifact limits,
	// not by a size of their own.
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "ergon-artifacts", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "ergon-input-artifacts", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "ergon-artifact-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: artifacts.Audience, ExpirationSeconds: new(int64(artifactTokenSeconds)), Path: path.Base(stepcontract.ArtifactTokenFile),
			}}},
		}}})
	main.VolumeMounts = append(main.VolumeMounts,
		corev1.VolumeMount{Name: "ergon-artifacts", MountPath: stepcontract.ArtifactsDir},
		corev1.VolumeMount{Name: "ergon-input-artifacts", MountPath: stepcontract.InputArtifactsDir},
		corev1.VolumeMount{Name: "ergon-artifact-token", MountPath: stepcontract.ArtifactTokenDir, ReadOnly: true})
}

// inputArtifactPath is where a step's pod finds an artifact it reads.
func inputArtifactPath(in ergonv1alpha1.InputArtifact) string {
	if in.Path != "" {
		return in.Path
	}
	return path.Join(stepcontract.InputArtifactsDir, in.Step, in.Name)
}

// collectArtifacts records the artifacts a succeeded pod wrote, from its report: each key is
// made here, from the namespace, the Run, the step, the attempt and the pod's UID, never taken
// from the pod. A declared artifact the report does not list fails the attempt
// (ArtifactMissing); the reason is empty (OutputError) for other errors.
func (r *RunReconciler) collectArtifacts(ctx context.Context, run *ergonv1alpha1.Run,
	pod *corev1.Pod) ([]ergonv1alpha1.ArtifactStatus, string, error) {
	scene, err := r.compiled(ctx, run)
	if err != nil {
		return nil, "", err
	}
	stepName := pod.Labels[ergonv1alpha1.LabelStep]
	step := scene.Steps[stepName]
	if step == nil || len(step.Spec.Artifacts) == 0 {
		return nil, "", nil
	}
	var message string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == shared.StepContainer && cs.State.Terminated != nil {
			message = cs.State.Terminated.Message
		}
	}
	rep, err := wire.ParseReport(message)
	if err != nil {
		return nil, "", err
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: run.Namespace}, ns); err != nil {
		return nil, "", fmt.Errorf("reading the namespace's UID for the artifacts' keys: %w", err)
	}
	attempt, _ := strconv.ParseInt(pod.Labels[ergonv1alpha1.LabelAttempt], 10, 32)
	reported := map[string]wire.Artifact{}
	for _, a := range rep.Artifacts {
		reported[a.Name] = a
	}
	var out []ergonv1alpha1.ArtifactStatus
	for _, a := range step.Spec.Artifacts {
		got, ok := reported[a.Name]
		if !ok {
			return nil, ergonv1alpha1.ReasonArtifactMissing, fmt.Errorf("the step's pod did not report its artifact %q", a.Name)
		}
		ref := artifacts.Ref{NamespaceUID: ns.UID, RunUID: run.UID, Step: stepName, Instance: -1, Attempt: int32(attempt),
			PodUID: pod.UID, Name: a.Name}
		out = append(out, ergonv1alpha1.ArtifactStatus{Name: a.Name, Attempt: int32(attempt), Size: got.Size, SHA256: got.SHA256,
			MediaType: a.MediaType, Key: ref.Key()})
	}
	return out, "", nil
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// Keys of a pod-bound ServiceAccount token's extra, as TokenReview reports them.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// ArtifactScope is the artifact endpoint's authority (artifacts.Authority): it says what the
// step pod whose token this is may write and read. The token must be one the API server issued
// for the endpoint's audience and bound to a pod that exists with that UID; the pod must be
// the one the Run's status names for a step that has not ended; then the step may write the
// artifacts its Scene declares, under keys of that pod, and read the recorded artifacts of
// earlier steps it declares as inputs. Everything is read from the API server, not the cache.
func (r *RunReconciler) ArtifactScope(ctx context.Context, token string) (*artifacts.Scope, error) {
	refuse := func(format string, args ...any) error {
		return &artifacts.Refusal{Status: http.StatusForbidden, Reason: "Forbidden", Message: fmt.Sprintf(format, args...)}
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{artifacts.Audience}}}
	if err := r.Create(ctx, review); err != nil {
		return nil, fmt.Errorf("reviewing the token: %w", err)
	}
	st := review.Status
	podName, podUID := first(st.User.Extra[extraPodName]), first(st.User.Extra[extraPodUID])
	namespace, _, isSA := strings.Cut(strings.TrimPrefix(st.User.Username, "system:serviceaccount:"), ":")
	if !st.Authenticated || !slices.Contains(st.Audiences, artifacts.Audience) || !isSA ||
		!strings.HasPrefix(st.User.Username, "system:serviceaccount:") || podName == "" || podUID == "" {
		return nil, &artifacts.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized",
			Message: "not a pod-bound token for the artifact endpoint"}
	}
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: podName}, pod); err != nil || string(pod.UID) != podUID {
		return nil, refuse("pod %s/%s is gone", namespace, podName)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != shared.KindRun || owner.APIVersion != ergonv1alpha1.GroupVersion.String() {
		return nil, refuse("pod %s/%s is no Run's", namespace, podName)
	}
	run := &ergonv1alpha1.Run{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: owner.Name}, run); err != nil || run.UID != owner.UID {
		return nil, refuse("the Run of pod %s/%s is gone", namespace, podName)
	}
	var step *ergonv1alpha1.StepStatus
	for i := range run.Status.Steps {
		if s := &run.Status.Steps[i]; s.PodName == podName && s.Loop == nil && s.Instances == nil {
			step = s
		}
	}
	switch {
	case step == nil && !run.Status.Phase.Finished():
		// The status write that records a new pod may land after the pod starts: the pod
		// asks again (a 503 is retried), and a pod no status ever names never gets a grant.
		return nil, &artifacts.Refusal{Status: http.StatusServiceUnavailable, Reason: "NotYet",
			Message: fmt.Sprintf("Run %s's status names no step run by pod %s/%s (yet)", run.Name, namespace, podName)}
	case step == nil || step.Phase.Finished():
		return nil, refuse("pod %s/%s runs no step of Run %s that has not ended", namespace, podName, run.Name)
	}
	scene, err := r.compiled(ctx, run)
	if err != nil {
		return nil, err
	}
	spec := scene.Steps[step.Name]
	if spec == nil {
		return nil, refuse("Run %s has no step %s", run.Name, step.Name)
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return artifactScope(run, ns.UID, spec, pod, r.Config.Artifacts), nil
}

// artifactScope is what the pod of step may write and read, from its Run's status.
func artifactScope(run *ergonv1alpha1.Run, nsUID types.UID, step *compile.Step, pod *corev1.Pod,
	cfg *ArtifactsConfig) *artifacts.Scope {
	scope := &artifacts.Scope{Puts: map[string]artifacts.Ref{}, Gets: map[string]artifacts.Recorded{}}
	if cfg != nil {
		scope.MaxBytes, scope.RunBytes = cfg.MaxBytes, cfg.RunBytes
	}
	attempt, _ := strconv.ParseInt(pod.Labels[ergonv1alpha1.LabelAttempt], 10, 32)
	for _, a := range step.Spec.Artifacts {
		scope.Puts[a.Name] = artifacts.Ref{NamespaceUID: nsUID, RunUID: run.UID, Step: step.Name, Instance: -1,
			Attempt: int32(attempt), PodUID: pod.UID, Name: a.Name}
	}
	recorded := map[string]artifacts.Recorded{}
	for _, s := range run.Status.Steps {
		for _, a := range s.Artifacts {
			recorded[s.Name+"/"+a.Name] = artifacts.Recorded{Key: a.Key, Size: a.Size, SHA256: a.SHA256}
			scope.RunBytesKept += a.Size
		}
	}
	for _, in := range step.Spec.InputArtifacts {
		if rec, ok := recorded[in.Step+"/"+in.Name]; ok {
			scope.Gets[in.Step+"/"+in.Name] = rec
		}
	}
	return scope
}

func first(v authenticationv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// reuseArtifacts copies the artifacts of a step a rerun reuses into the rerun's own keys, so
// that no Run reads another's: each Run's artifacts then go with it alone (the collector).
// An artifact the store no longer has fails the rerun, saying so.
func (r *RunReconciler) reuseArtifacts(ctx context.Context, run *ergonv1alpha1.Run, original string,
	s ergonv1alpha1.StepStatus) ([]ergonv1alpha1.ArtifactStatus, error) {
	if len(s.Artifacts) == 0 {
		return nil, nil
	}
	cfg := r.Config.Artifacts
	if cfg == nil || cfg.Store == nil {
		return nil, &retryError{fmt.Sprintf("step %s of Run %s made artifacts, and this manager keeps none: "+
			"it cannot be reused", s.Name, original)}
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: run.Namespace}, ns); err != nil {
		return nil, err
	}
	out := make([]ergonv1alpha1.ArtifactStatus, 0, len(s.Artifacts))
	for _, a := range s.Artifacts {
		ref, err := artifacts.ParseKey(a.Key)
		if err != nil {
			return nil, &retryError{fmt.Sprintf("artifact %s of step %s of Run %s: %v", a.Name, s.Name, original, err)}
		}
		ref.NamespaceUID, ref.RunUID = ns.UID, run.UID
		if err := cfg.Store.Copy(ctx, ref.Key(), a.Key); errors.Is(err, store.ErrNotFound) {
			return nil, &retryError{fmt.Sprintf("artifact %s of step %s of Run %s is no longer in the store; "+
				"it cannot be reused", a.Name, s.Name, original)}
		} else if err != nil {
			return nil, fmt.Errorf("copying artifact %s of step %s: %w", a.Name, s.Name, err)
		}
		a.Key = ref.Key()
		out = append(out, a)
	}
	return out, nil
}
