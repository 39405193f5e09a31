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

package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// policyPrefix is the name prefix config/default gives what it installs.
const policyPrefix = "ergon-"

// probeFile holds the policy InstallPolicies probes; it is created last (see waitPolicies).
const probeFile = "internal_configmaps.yaml"

// InstallPolicies creates the ValidatingAdmissionPolicies and bindings of the YAML files in dir
// (config/policies) as config/default names them, and returns once the API server enforces
// them. They exempt ManagerUsername and system:masters, the environment's administrator.
func (e *Environment) InstallPolicies(dir string) error {
	c, err := client.New(e.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	slices.SortStableFunc(files, func(a, b string) int {
		switch {
		case filepath.Base(a) == probeFile:
			return 1
		case filepath.Base(b) == probeFile:
			return -1
		}
		return strings.Compare(a, b)
	})
	ctx := context.Background()
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, u := range objs {
			u.SetName(policyPrefix + u.GetName())
			if name, ok, _ := unstructured.NestedString(u.Object, "spec", "policyName"); ok {
				if err := unstructured.SetNestedField(u.Object, policyPrefix+name, "spec", "policyName"); err != nil {
					return err
				}
			}
			if err := c.Create(ctx, u); err != nil {
				return fmt.Errorf("installing %s %s from %s: %w", u.GetKind(), u.GetName(), f, err)
			}
		}
	}
	return e.waitPolicies(ctx, c, time.Minute)
}

// readObjects decodes every object of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// waitPolicies waits until the API server refuses what the probe policy forbids: a ConfigMap
// labelled ergon.dev/internal created (dry run) by someone RBAC lets create ConfigMaps. The
// API server compiles the policies it has seen all at once, and the probe's was created last,
// so then every policy is enforced.
func (e *Environment) waitPolicies(ctx context.Context, admin client.Client, timeout time.Duration) error {
	const probe = "system:ergon-testenv:policy-probe"
	meta := metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "ergon-testenv-policy-probe"}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: probe}}}
	for _, obj := range []client.Object{role, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			return err
		}
		defer func() { _ = admin.Delete(ctx, obj) }()
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: probe}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: meta.Namespace, Name: meta.Name,
			Labels: map[string]string{ergonv1alpha1.LabelInternal: "true"}}}
		err := c.Create(ctx, cm, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the admission policies of config/policies are not enforced after %s: a labelled ConfigMap "+
				"was answered %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
