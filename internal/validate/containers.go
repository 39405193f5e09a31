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

package validate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// imageReference is the grammar of an image reference (name, then an optional tag and digest),
// as the kubelet parses it: an image outside it fails every attempt with InvalidImageName.
var imageReference = regexp.MustCompile(
	`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// validateContainers refuses what the API server or the kubelet would refuse in every pod of a
// container step, at admission rather than when the step starts: an image that is no image
// reference, a request above its limit, env and envFrom names that no variable, Secret or
// ConfigMap can have, and env names of the step contract's, which would break it.
func validateContainers(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	var errs field.ErrorList
	if r := spec.StepResources; r != nil {
		errs = append(errs, validResources(field.NewPath("spec", "stepResources"), *r)...)
	}
	for path, s := range closure.Steps(spec) {
		if s.Container != nil {
			errs = append(errs, validateContainer(path.Child("container"), s.Container)...)
		}
		if s.Agent != nil && s.Agent.Resources != nil {
			errs = append(errs, validResources(path.Child("agent", "resources"), *s.Agent.Resources)...)
		}
	}
	return errs
}

func validateContainer(path *field.Path, c *ergonv1alpha1.ContainerStep) field.ErrorList {
	var errs field.ErrorList
	if c.Image != "" && !imageReference.MatchString(c.Image) {
		errs = append(errs, field.Invalid(path.Child("image"), c.Image,
			"not an image reference (the kubelet would refuse it as InvalidImageName); "+
				"for example busybox:1.36 or registry.example:5000/team/tool@sha256:..."))
	}
	errs = append(errs, validResources(path.Child("resources"), c.Resources)...)
	for j, e := range c.Env {
		p := path.Child("env").Index(j)
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
		}
		if strings.HasPrefix(e.Name, stepcontract.EnvPrefix) {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, fmt.Sprintf("names beginning with %s are the step "+
				"contract's, which Ergon sets (where the output goes, the params, the inputs); choose another name",
				stepcontract.EnvPrefix)))
		}
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			errs = append(errs, keyRef(p.Child("valueFrom", "secretKeyRef"), "Secret", r.Name, r.Key)...)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			errs = append(errs, keyRef(p.Child("valueFrom", "configMapKeyRef"), "ConfigMap", r.Name, r.Key)...)
		}
	}
	for j, e := range c.EnvFrom {
		p := path.Child("envFrom").Index(j)
		if e.Prefix != "" {
			for _, msg := range validation.IsEnvVarName(e.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), e.Prefix, msg))
			}
		}
		if r := e.SecretRef; r != nil {
			errs = append(errs, objectName(p.Child("secretRef", "name"), "Secret", r.Name)...)
		}
		if r := e.ConfigMapRef; r != nil {
			errs = append(errs, objectName(p.Child("configMapRef", "name"), "ConfigMap", r.Name)...)
		}
	}
	return errs
}

// validResources refuses requests and limits that no pod can have: a negative quantity, or a
// request above its limit.
func validResources(path *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(list.list)) {
			if q := list.list[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(list.name).Key(string(name)), q.String(),
					"must not be negative; use 0 to ask for none"))
			}
		}
	}
	return append(errs, requestsWithinLimits(path, r)...)
}

// requestsWithinLimits refuses a request above the limit of the same resource, which the API
// server refuses in every pod.
func requestsWithinLimits(path *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		request := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), request.String(),
				fmt.Sprintf("must not be more than the limit (%s); lower the request or raise the limit", limit.String())))
		}
	}
	return errs
}

func keyRef(path *field.Path, kind, name, key string) field.ErrorList {
	errs := objectName(path.Child("name"), kind, name)
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Child("key"), key, fmt.Sprintf("no %s can have this key: %s", kind, msg)))
	}
	return errs
}

func objectName(path *field.Path, kind, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, fmt.Sprintf("no %s can have this name: %s", kind, msg)))
	}
	return errs
}
