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

package security

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The actors of the attack suite. Each is a real identity the API server authenticates by a
// client certificate and authorizes with RBAC, so the webhooks and SubjectAccessReviews see it.
const (
	roleEdit        = "edit"                // Kubernetes' own, with Ergon's kinds aggregated in
	roleView        = "view"                // Kubernetes' own, with Ergon's kinds aggregated in
	roleErgonEditor = "ergon-editor"        // Ergon's kinds only: cannot read Secrets
	roleApprover    = "ergon-gate-approver" // may decide Gates
	// roleErgonAdmin holds the verb admin on workspaces: may manage anyone's Workspace.
	roleErgonAdmin = "ergon-admin"
	// roleWorkspaceUser holds the verb use on workspaces: a guest in other people's Workspaces.
	roleWorkspaceUser = "ergon-workspace-user"
	roleRunCreator    = "security-run-creator"
)

// ctx is the context of every API call in the suite.
var ctx = context.Background()

// userConfig is a rest.Config that authenticates as name with groups.
func userConfig(name string, groups ...string) *rest.Config {
	user, err := testEnv.AddUser(envtest.User{Name: name, Groups: groups}, adminCfg)
	Expect(err).NotTo(HaveOccurred())
	return user.Config()
}

// userClient is a client that acts as name, bound to clusterRole in namespace (when not empty).
//
//nolint:unparam // specs that need groups pass them
func userClient(namespace, name, clusterRole string, groups ...string) client.Client {
	c, err := client.New(userConfig(name, groups...), client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	if clusterRole != "" {
		bindRole(namespace, name, clusterRole)
	}
	return c
}

// bindRole grants clusterRole to user within namespace.
func bindRole(namespace, user, clusterRole string) {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "security-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	Expect(admin.Create(ctx, rb)).To(Succeed())
}

// bindCluster grants clusterRole to subject across the cluster.
func bindCluster(name, clusterRole string, subject rbacv1.Subject) {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "security-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{subject},
	}
	Expect(admin.Create(ctx, crb)).To(Succeed())
}

// newNamespace makes a namespace of its own for one spec.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "attack-"}}
	Expect(admin.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { _ = admin.Delete(ctx, ns) })
	return ns.Name
}

// installRBAC applies the manager's ClusterRole and the roles for people from config/rbac, named
// as config/default names them, and does what the cluster's aggregation controller (which
// envtest does not run) would: Ergon's aggregate-to-view and -edit rules join view and edit.
// A role allowed to only create Runs stands for the narrowest tenant.
func installRBAC() {
	// The rules edit and view aggregate from Kubernetes' own bootstrap roles: without the
	// aggregation controller, edit could not even create a pod.
	for into, from := range map[string][]string{
		roleView: {"system:aggregate-to-view"},
		roleEdit: {"system:aggregate-to-edit", "system:aggregate-to-view"},
	} {
		for _, name := range from {
			Eventually(func() error {
				src := &rbacv1.ClusterRole{}
				if err := admin.Get(ctx, client.ObjectKey{Name: name}, src); err != nil {
					return err
				}
				return appendRules(into, src.Rules)
			}).Should(Succeed())
		}
	}
	for _, file := range []string{"role.yaml", "trigger_key_reader_role.yaml", "user_roles.yaml"} {
		for _, role := range readClusterRoles(filepath.Join("..", "..", "config", "rbac", file)) {
			role.Name = "ergon-" + role.Name
			Expect(admin.Create(ctx, role)).To(Succeed())
			for label, into := range map[string]string{
				"rbac.authorization.k8s.io/aggregate-to-view": roleView,
				"rbac.authorization.k8s.io/aggregate-to-edit": roleEdit,
			} {
				if role.Labels[label] != "true" {
					continue
				}
				Eventually(func() error { return appendRules(into, role.Rules) }).Should(Succeed())
			}
		}
	}
	Expect(admin.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: roleRunCreator},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"runs"}, Verbs: []string{"create"}},
		},
	})).To(Succeed())
}

// appendRules adds rules to a built-in ClusterRole; the API server bootstraps those roles
// shortly after it starts, so it may not find them at first.
func appendRules(name string, rules []rbacv1.PolicyRule) error {
	role := &rbacv1.ClusterRole{}
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
		return err
	}
	// The bootstrap controller may still own the aggregation rule; drop it so it keeps our rules.
	role.AggregationRule = nil
	role.Rules = append(role.Rules, rules...)
	return admin.Update(ctx, role)
}

// readClusterRoles decodes every ClusterRole in a multi-document YAML file.
func readClusterRoles(path string) []*rbacv1.ClusterRole {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var roles []*rbacv1.ClusterRole
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		role := &rbacv1.ClusterRole{}
		err := dec.Decode(role)
		if errors.Is(err, io.EOF) {
			return roles
		}
		Expect(err).NotTo(HaveOccurred())
		if role.Kind == "ClusterRole" {
			roles = append(roles, role)
		}
	}
}

var _ = Describe("The attack suite's actors", func() {
	It("are who RBAC says: an ergon-editor cannot read Secrets, a view user cannot create Runs", func() {
		ns := newNamespace()
		editor := userClient(ns, "mallory-editor", roleErgonEditor)
		viewer := userClient(ns, "victor-viewer", roleView)
		Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
			StringData: map[string]string{"k": "v"}})).To(Succeed())
		err := editor.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s"}, &corev1.Secret{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "ergon-editor must not read Secrets: %v", err)
		var runs ergonv1alpha1.RunList
		Expect(viewer.List(ctx, &runs, client.InNamespace(ns))).To(Succeed(), "view includes Ergon's kinds")
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "nope"}}}
		err = viewer.Create(ctx, run)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "view must not create Runs: %v", err)
	})
})
