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
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/ergon-dev/ergon/internal/artifacts"
)

// knownVolumes are the volume sources whose references PodQuestions lists. A pod with any
// other (a new Kubernetes field included) is refused: Ergon cannot say what it would use.
var knownVolumes = map[string]bool{
	"EmptyDir": true, "Secret": true, "ConfigMap": true, "Projected": true, "DownwardAPI": true,
	"PersistentVolumeClaim": true, "Image": true,
}

// UnknownVolume is a pod refused because it has a volume whose references Ergon cannot list.
type UnknownVolume struct {
	Volume, Type string
}

func (u *UnknownVolume) Error() string {
	return fmt.Sprintf("volume %s is of type %s, which Ergon does not authorize; only emptyDir, secret, configMap, "+
		"projected (secret, configMap, downwardAPI, the artifact endpoint's token), downwardAPI, persistentVolumeClaim and "+
		"image volumes are allowed",
		u.Volume, u.Type)
}

// PodQuestions lists what a pod makes the kubelet read for it, the way Kubernetes lists a pod's
// Secret and ConfigMap names: every container's env and envFrom (init and ephemeral containers
// too), every volume (projected sources included), image pull Secrets, and claims. Each becomes
// a "get" of that object in the pod's namespace. Objects the caller vouches for (a bound
// Workspace's own claim, authorized as "use" of the Workspace; the Run's own state that the
// manager keeps in ConfigMaps) are left out: vouched(resource, name) says which.
func PodQuestions(pod *corev1.Pod, vouched func(resource, name string) bool) ([]Attributes, error) {
	ns := pod.Namespace
	var out []Attributes
	seen := map[Attributes]bool{}
	add := func(resource, name string) {
		if name == "" || (vouched != nil && vouched(resource, name)) {
			return
		}
		a := Attributes{Verb: "get", Resource: resource, Namespace: ns, Name: name}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	envs := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("secrets", r.Name)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("configmaps", r.Name)
			}
		}
		for _, e := range from {
			if e.SecretRef != nil {
				add("secrets", e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add("configmaps", e.ConfigMapRef.Name)
			}
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		envs(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		envs(c.Env, c.EnvFrom)
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		if t := volumeType(v.VolumeSource); !knownVolumes[t] {
			return nil, &UnknownVolume{Volume: v.Name, Type: t}
		}
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil:
					add("secrets", src.Secret.Name)
				case src.ConfigMap != nil:
					add("configmaps", src.ConfigMap.Name)
				case src.DownwardAPI != nil:
				case src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == artifacts.Audience &&
					(pod.Spec.ServiceAccountName == "" || pod.Spec.ServiceAccountName == "default"):
					// The pod's token for Ergon's artifact endpoint, which the API server
					// refuses: it reaches nothing but the endpoint, which grants only what
					// the pod's own step makes and reads (docs/artifacts.md).
				default:
					// A ServiceAccount token, a ClusterTrustBundle, a pod certificate:
					// credentials a step pod never carries.
					return nil, &UnknownVolume{Volume: v.Name, Type: "projected " + projectedType(src)}
				}
			}
		}
	}
	return out, nil
}

// volumeType is the name of the one source a volume sets ("Secret", "HostPath", ...).
func volumeType(src corev1.VolumeSource) string {
	return setField(reflect.ValueOf(src))
}

func projectedType(src corev1.VolumeProjection) string {
	return setField(reflect.ValueOf(src))
}

func setField(v reflect.Value) string {
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return v.Type().Field(i).Name
		}
	}
	return "none"
}
