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

package authz

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodQuestions(t *testing.T) {
	secretEnv := corev1.EnvVar{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s-env"}, Key: "k"}}}
	cmEnv := corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm-env"}, Key: "k"}}}
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	cases := []struct {
		name    string
		pod     corev1.PodSpec
		vouched []string
		want    []string
		unknown string
	}{
		{name: "a pod that references nothing asks nothing",
			pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}},
		{name: "env, envFrom of init and main containers and image pull Secrets are each asked once",
			pod: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{secretEnv}}},
				Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{secretEnv, cmEnv}, EnvFrom: []corev1.EnvFromSource{
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s-from"}}},
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-from"}}},
				}}},
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			},
			want: []string{"secrets/s-env", "configmaps/cm-env", "secrets/s-from", "configmaps/cm-from", "secrets/pull"}},
		{name: "ephemeral containers count too",
			pod: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Env: []corev1.EnvVar{secretEnv}}}}},
			want: []string{"secrets/s-env"}},
		{name: "secret, configMap, projected and claim volumes are asked; emptyDir and downwardAPI are not",
			pod: corev1.PodSpec{Volumes: []corev1.Volume{
				vol("a", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-vol"}}),
				vol("b", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-vol"}}}),
				vol("c", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s-proj"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-proj"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				}}}),
				vol("d", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}),
				vol("e", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("f", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}),
			}},
			want: []string{"secrets/s-vol", "configmaps/cm-vol", "secrets/s-proj", "configmaps/cm-proj", "persistentvolumeclaims/data"}},
		{name: "a claim the caller vouches for is left out",
			pod: corev1.PodSpec{Volumes: []corev1.Volume{
				vol("w", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ws"}}),
				vol("o", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}),
			}},
			vouched: []string{"ws"},
			want:    []string{"persistentvolumeclaims/other"}},
		{name: "a hostPath volume is refused",
			pod:     corev1.PodSpec{Volumes: []corev1.Volume{vol("h", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}})}},
			unknown: "HostPath"},
		{name: "a CSI volume, which can name a Secret of its own, is refused",
			pod:     corev1.PodSpec{Volumes: []corev1.Volume{vol("c", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x"}})}},
			unknown: "CSI"},
		{name: "a projected ServiceAccount token is refused",
			pod: corev1.PodSpec{Volumes: []corev1.Volume{vol("t", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}})}},
			unknown: "projected ServiceAccountToken"},
		{name: "a token for the API server, of the default ServiceAccount, is refused",
			pod: corev1.PodSpec{Volumes: []corev1.Volume{vol("t", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: "https://kubernetes.default.svc", Path: "t"}}}}})}},
			unknown: "projected ServiceAccountToken"},
		{name: "the artifact endpoint's token of another ServiceAccount is refused",
			pod: corev1.PodSpec{ServiceAccountName: "deployer", Volumes: []corev1.Volume{vol("t", corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: "ergon-artifacts", Path: "t"}}}}})}},
			unknown: "projected ServiceAccountToken"},
		{name: "the artifact endpoint's token of the default ServiceAccount asks nothing",
			pod: corev1.PodSpec{Volumes: []corev1.Volume{vol("t", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: "ergon-artifacts", Path: "t"}}}}})}},
			want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.pod}
			pod.Namespace = "team"
			got, err := PodQuestions(pod, func(resource, name string) bool {
				return resource == "persistentvolumeclaims" && slices.Contains(c.vouched, name)
			})
			if c.unknown != "" {
				var u *UnknownVolume
				if !errors.As(err, &u) || u.Type != c.unknown {
					t.Fatalf("want the volume type %s refused, got %v", c.unknown, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range got {
				if a.Verb != "get" || a.Namespace != "team" {
					t.Errorf("question %v is not a get in the pod's namespace", a)
				}
				names = append(names, a.Resource+"/"+a.Name)
			}
			if len(names) != len(c.want) {
				t.Fatalf("got %v, want %v", names, c.want)
			}
			for i := range names {
				if names[i] != c.want[i] {
					t.Fatalf("got %v, want %v", names, c.want)
				}
			}
		})
	}
}
