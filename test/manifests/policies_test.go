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

package manifests

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// policies are the ValidatingAdmissionPolicies of config/policies, by name without prefix.
var policies = []string{"status", "internal-configmaps", "workspace-owner"}

// TestRenderingsInstallTheAdmissionPolicies checks, for each way of installing Ergon, that the
// admission policies come with it, each bound to deny, failing closed, and exempting the
// ServiceAccount the manager's Deployment actually runs as: exempting another would refuse the
// manager's own status writes, and exempting none would be no exemption.
func TestRenderingsInstallTheAdmissionPolicies(t *testing.T) {
	all := append(slices.Clone(renderings),
		rendering{name: "chart, a ServiceAccount of its own name", render: helmTemplate("--set", "serviceAccount.name=ergon-bot")})
	for _, r := range all {
		t.Run(r.name, func(t *testing.T) {
			var deployment appsv1.Deployment
			found := map[string]admissionregistrationv1.ValidatingAdmissionPolicy{}
			bound := map[string]admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			adminVerb := false
			for _, u := range objects(t, r.render(t)) {
				switch u.GroupVersionKind().GroupKind().String() {
				case "Deployment.apps":
					decode(t, u, &deployment)
				case "ValidatingAdmissionPolicy.admissionregistration.k8s.io":
					var p admissionregistrationv1.ValidatingAdmissionPolicy
					decode(t, u, &p)
					found[p.Name] = p
				case "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io":
					var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
					decode(t, u, &b)
					bound[b.Spec.PolicyName] = b
				case "ClusterRole.rbac.authorization.k8s.io":
					var role rbacv1.ClusterRole
					decode(t, u, &role)
					for _, rule := range role.Rules {
						adminVerb = adminVerb || (slices.Contains(rule.Resources, "workspaces") && slices.Contains(rule.Verbs, "admin"))
					}
				}
			}
			manager := "system:serviceaccount:" + namespace + ":" + deployment.Spec.Template.Spec.ServiceAccountName
			if len(found) != len(policies) {
				t.Errorf("the rendering has policies %v, want %v", keys(found), policies)
			}
			for _, name := range policies {
				var p admissionregistrationv1.ValidatingAdmissionPolicy
				for full, candidate := range found {
					if strings.HasSuffix(full, "-"+name) {
						p = candidate
					}
				}
				if p.Name == "" {
					t.Errorf("no policy %s in %v", name, keys(found))
					continue
				}
				if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
					t.Errorf("%s does not fail closed", p.Name)
				}
				if b, ok := bound[p.Name]; !ok || !slices.Equal(b.Spec.ValidationActions,
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
					t.Errorf("%s is not bound to deny: %+v", p.Name, b.Spec)
				}
				exempt := slices.ContainsFunc(p.Spec.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool {
					return strings.Contains(c.Expression, "'"+manager+"'")
				})
				if !exempt {
					t.Errorf("%s does not exempt the manager's ServiceAccount %s: %+v", p.Name, manager, p.Spec.MatchConditions)
				}
			}
			if !adminVerb {
				t.Errorf("no ClusterRole grants the verb admin on workspaces, which the policy workspace-owner checks")
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
