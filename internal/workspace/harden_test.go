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

package workspace

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// TestHardenMakesAnyPodRestricted hardens pods that break the restricted profile in every
// way a step or workspace pod could, and checks each comes out restricted, with the
// Workspace's user, runtime class and no credentials, and with what Harden must not touch
// (volumes, images, env) left as it was.
func TestHardenMakesAnyPodRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	container := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}
	}
	for _, tc := range []struct {
		name    string
		runtime *string
		pod     func(*corev1.PodSpec)
	}{
		{"a plain pod", nil, func(*corev1.PodSpec) {}},
		{"host namespaces and user namespace off", nil, func(s *corev1.PodSpec) {
			s.HostNetwork, s.HostPID, s.HostIPC, s.HostUsers = true, true, true, new(true)
		}},
		{"a mounted token and service links", nil, func(s *corev1.PodSpec) {
			s.AutomountServiceAccountToken, s.EnableServiceLinks = new(true), new(true)
		}},
		{"root, an unconfined seccomp profile and another fsGroup", nil, func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(0)), RunAsNonRoot: new(false),
				FSGroup: new(int64(0)), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}},
		{"a privileged container and init container with added capabilities", nil, func(s *corev1.PodSpec) {
			for _, c := range []*corev1.Container{&s.Containers[0], &s.InitContainers[0]} {
				c.SecurityContext = &corev1.SecurityContext{Privileged: new(true), AllowPrivilegeEscalation: new(true),
					RunAsUser: new(int64(0)), ReadOnlyRootFilesystem: new(false),
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}}}
			}
		}},
		{"a host port", nil, func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80, HostIP: "0.0.0.0"}}
		}},
		{"another runtime class replaced by the Workspace's", new("gvisor"), func(s *corev1.PodSpec) {
			s.RuntimeClassName = new("runc")
		}},
		{"a runtime class the Workspace does not set is dropped", nil, func(s *corev1.PodSpec) {
			s.RuntimeClassName = new("runc")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.RuntimeClassName = tc.runtime })
			spec := corev1.PodSpec{
				InitContainers: []corev1.Container{container("init")},
				Containers:     []corev1.Container{container("main"), container("side")},
				Volumes:        Volumes("claim"),
			}
			tc.pod(&spec)
			before := fmt.Sprint(spec.Volumes, spec.Containers[0].Image, spec.Containers[0].Env)
			Harden(&spec, ws)

			res := policy.AggregateCheckResults(evaluator.EvaluatePod(
				api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &metav1.ObjectMeta{}, &spec))
			if !res.Allowed {
				t.Fatalf("breaks the restricted profile: %s: %s", res.ForbiddenReason(), res.ForbiddenDetail())
			}
			if *spec.AutomountServiceAccountToken || *spec.EnableServiceLinks {
				t.Error("a service account token or service links are left")
			}
			if spec.HostNetwork || spec.HostPID || spec.HostIPC || spec.HostUsers != nil {
				t.Error("a host namespace is left")
			}
			if fmt.Sprint(spec.RuntimeClassName) != fmt.Sprint(tc.runtime) {
				t.Errorf("runtimeClassName %v, want the Workspace's %v", spec.RuntimeClassName, tc.runtime)
			}
			sc := spec.SecurityContext
			if !*sc.RunAsNonRoot || *sc.RunAsUser != UID || *sc.RunAsGroup != UID || *sc.FSGroup != UID ||
				sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v, want non-root %d:%d, fsGroup %d, RuntimeDefault seccomp", sc, UID, UID, UID)
			}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				csc := c.SecurityContext
				if *csc.AllowPrivilegeEscalation || !*csc.ReadOnlyRootFilesystem || !*csc.RunAsNonRoot || csc.Privileged != nil ||
					!slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) != 0 ||
					csc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("container %s has security context %+v", c.Name, csc)
				}
				for _, p := range c.Ports {
					if p.HostPort != 0 || p.HostIP != "" {
						t.Errorf("container %s keeps host port %d on %q", c.Name, p.HostPort, p.HostIP)
					}
				}
			}
			if after := fmt.Sprint(spec.Volumes, spec.Containers[0].Image, spec.Containers[0].Env); after != before {
				t.Errorf("Harden changed volumes, image or env: %s, was %s", after, before)
			}
		})
	}
}

func TestStepEnvPutsTheWorkspacesEnvUnderTheSteps(t *testing.T) {
	secret := corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}}
	config := corev1.EnvVar{Name: "REGION", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "region"}}}
	for _, tc := range []struct {
		name            string
		workspace, step []corev1.EnvVar
		want            []corev1.EnvVar
	}{
		{"no env of the Workspace", nil, []corev1.EnvVar{{Name: "ERGON_RUN", Value: "r"}},
			[]corev1.EnvVar{{Name: "ERGON_RUN", Value: "r"}}},
		{"the Workspace's first, refs by reference", []corev1.EnvVar{{Name: "LANG", Value: "C.UTF-8"}, secret, config},
			[]corev1.EnvVar{{Name: "ERGON_RUN", Value: "r"}},
			[]corev1.EnvVar{{Name: "LANG", Value: "C.UTF-8"}, secret, config, {Name: "ERGON_RUN", Value: "r"}}},
		{"the step wins a clash, Ergon's variables too", []corev1.EnvVar{{Name: "MODE", Value: "ws"}, {Name: "ERGON_RUN", Value: "forged"}, secret},
			[]corev1.EnvVar{{Name: "ERGON_RUN", Value: "r"}, {Name: "MODE", Value: "step"}},
			[]corev1.EnvVar{secret, {Name: "ERGON_RUN", Value: "r"}, {Name: "MODE", Value: "step"}}},
		{"a step value wins over a Workspace's secret", []corev1.EnvVar{secret}, []corev1.EnvVar{{Name: "TOKEN", Value: "mine"}},
			[]corev1.EnvVar{{Name: "TOKEN", Value: "mine"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.Env = tc.workspace })
			got := StepEnv(ws, tc.step)
			if fmtValue(got) != fmtValue(tc.want) {
				t.Errorf("env %s, want %s", fmtValue(got), fmtValue(tc.want))
			}
			if len(got) > 0 && len(ws.Spec.Env) > 0 && got[0].ValueFrom != nil && got[0].ValueFrom == ws.Spec.Env[0].ValueFrom {
				t.Error("the step's env shares a reference with the Workspace's spec")
			}
		})
	}
}
