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
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

func TestThePodMeetsPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := Pod(newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.RuntimeClassName = new("gvisor") }), entrypointImage, "the-claim")
	res := policy.AggregateCheckResults(evaluator.EvaluatePod(
		api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
	if !res.Allowed {
		t.Fatalf("the workspace pod breaks the restricted profile: %s: %s", res.ForbiddenReason(), res.ForbiddenDetail())
	}

	spec := pod.Spec
	if pod.Name != naming.WorkspaceObjectName("ws-uid") || spec.Volumes[1].PersistentVolumeClaim.ClaimName != "the-claim" {
		t.Errorf("pod %s mounts claim %v; want the pod named for the Workspace's UID, on the claim given", pod.Name,
			spec.Volumes[1].PersistentVolumeClaim)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "ws-uid" || pod.Labels[ergonv1alpha1.LabelWorkspaceUID] != "ws-uid" {
		t.Errorf("pod controlled by %v, labelled %v; want the Workspace's UID in both", ref, pod.Labels)
	}
	if *spec.AutomountServiceAccountToken || *spec.EnableServiceLinks || spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the pod has credentials, service links or host namespaces")
	}
	if *spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName %v, want gvisor", spec.RuntimeClassName)
	}
	sc := spec.SecurityContext
	if *sc.RunAsUser != 1000 || *sc.RunAsGroup != 1000 || *sc.FSGroup != 1000 {
		t.Errorf("pod runs as %d:%d with fsGroup %d, want 1000:1000 and 1000", *sc.RunAsUser, *sc.RunAsGroup, *sc.FSGroup)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if !*c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("container %s has a writable root", c.Name)
		}
	}
	c := spec.Containers[0]
	var writable []string
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			writable = append(writable, m.MountPath)
		}
	}
	if !slices.Equal(writable, []string{"/workspace", "/tmp"}) {
		t.Errorf("writable paths %v, want /workspace and /tmp", writable)
	}
	if tmp := spec.Volumes[2]; tmp.EmptyDir == nil || tmp.EmptyDir.SizeLimit == nil || tmp.EmptyDir.SizeLimit.String() != TmpSize {
		t.Errorf("/tmp is %+v, want an emptyDir of %s", tmp.VolumeSource, TmpSize)
	}
	if c.Image != "python:3.13" || !c.Resources.Limits.Cpu().Equal(*newWorkspace().Spec.Resources.Limits.Cpu()) {
		t.Errorf("container runs %s with %v, want the spec's image and resources", c.Image, c.Resources)
	}
	if spec.InitContainers[0].Image != entrypointImage || !slices.Equal(c.Command, EntrypointCommand) {
		t.Errorf("the container does not run Ergon's entrypoint copied in from %s", entrypointImage)
	}
}

func TestThePodIsReplacedWhenItsSpecChanges(t *testing.T) {
	hash := func(ws *ergonv1alpha1.Workspace) string {
		return Pod(ws, entrypointImage, "claim").Annotations[AnnotationPodSpecHash]
	}
	base := hash(newWorkspace())
	if base != hash(newWorkspace()) {
		t.Fatal("the same spec hashes differently")
	}
	for name, change := range map[string]func(*ergonv1alpha1.Workspace){
		"image": func(w *ergonv1alpha1.Workspace) { w.Spec.Image = "python:3.14" },
		"env":   func(w *ergonv1alpha1.Workspace) { w.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "b"}} },
		"runtimeClassName": func(w *ergonv1alpha1.Workspace) {
			w.Spec.RuntimeClassName = new("kata")
		},
	} {
		if hash(newWorkspace(change)) == base {
			t.Errorf("a change of %s keeps the old pod", name)
		}
	}
	if hash(newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.IdleTimeout = nil })) != base {
		t.Error("a change of idleTimeout, which the pod does not hold, replaces it")
	}
}

func TestTheNetworkPolicyDeniesIngressAndAllowsEgressAsTheSpecSays(t *testing.T) {
	for _, tc := range []struct {
		name    string
		network *ergonv1alpha1.WorkspaceNetwork
		egress  []networkingv1.NetworkPolicyEgressRule
	}{
		{"unset is Deny: nothing, DNS included", nil, []networkingv1.NetworkPolicyEgressRule{}},
		{"Deny", &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressDeny}, []networkingv1.NetworkPolicyEgressRule{}},
		{"Allow", &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressAllow}, []networkingv1.NetworkPolicyEgressRule{{}}},
		{"CIDRs", &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressCIDRs, CIDRs: []string{"10.1.0.0/16", "192.0.2.7/32"}},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.7/32"}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := NetworkPolicy(newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.Network = tc.network }), nil)
			if len(np.Spec.Ingress) != 0 || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				t.Errorf("ingress %v with policy types %v: want every ingress denied", np.Spec.Ingress, np.Spec.PolicyTypes)
			}
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || fmtValue(np.Spec.Egress) != fmtValue(tc.egress) {
				t.Errorf("egress %+v, want %+v", np.Spec.Egress, tc.egress)
			}
			if got := np.Spec.PodSelector.MatchLabels; len(got) != 1 || got[ergonv1alpha1.LabelWorkspaceUID] != "ws-uid" {
				t.Errorf("selects %v, want the pods labelled with Workspace desk's UID, its steps' included", got)
			}
		})
	}
}

// Two Workspaces whose names shorten to one label value: a name of 64 characters and the
// 63-character name its label value is.
func collidingWorkspaces() (long, short *ergonv1alpha1.Workspace) {
	long = newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Name = strings.Repeat("a", 64); w.UID = "uid-long" })
	short = newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Name = naming.LabelValue(long.Name); w.UID = "uid-short" })
	return long, short
}

func TestTheNetworkPoliciesOfTwoWorkspacesNeverSelectEachOthersPods(t *testing.T) {
	long, short := collidingWorkspaces()
	if Labels(long)[ergonv1alpha1.LabelWorkspace] != Labels(short)[ergonv1alpha1.LabelWorkspace] {
		t.Fatal("the names no longer collide as label values; the test needs two that do")
	}
	for _, ws := range []*ergonv1alpha1.Workspace{long, short} {
		other := long
		if ws == long {
			other = short
		}
		selector, err := metav1.LabelSelectorAsSelector(&NetworkPolicy(ws, nil).Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !selector.Matches(labels.Set(Pod(ws, entrypointImage, "c").Labels)) {
			t.Errorf("the policy of %s does not select its own pod", ws.Name)
		}
		if selector.Matches(labels.Set(Pod(other, entrypointImage, "c").Labels)) {
			t.Errorf("the policy of %s selects the pod of %s: their policies add up", ws.Name, other.Name)
		}
		legacy, err := metav1.LabelSelectorAsSelector(new(LegacyNetworkPolicySpec(ws).PodSelector))
		if err != nil {
			t.Fatal(err)
		}
		if legacy.Matches(labels.Set(Pod(other, entrypointImage, "c").Labels)) || legacy.Matches(labels.Set(Pod(ws, entrypointImage, "c").Labels)) {
			t.Errorf("the policy an earlier version made for %s selects a pod labelled with a UID", ws.Name)
		}
		if !legacy.Matches(labels.Set{ergonv1alpha1.LabelWorkspace: naming.LabelValue(ws.Name)}) {
			t.Errorf("the policy an earlier version made for %s no longer selects the step pods that version bound", ws.Name)
		}
	}
}

func TestTheClaimIsControlledByTheWorkspaceAndNamedForItsUID(t *testing.T) {
	claim := Claim(newWorkspace())
	if claim.Name != naming.WorkspaceObjectName("ws-uid") {
		t.Errorf("claim %s, want it named for the Workspace's UID", claim.Name)
	}
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.UID != "ws-uid" {
		t.Errorf("claim controlled by %v, want the Workspace", ref)
	}
}

// TestTheStepsOfAWorkspaceReachTheArtifactEndpoint: whatever a Workspace's egress, its step
// pods may reach Ergon's artifact endpoint by address (no name lookup), and nothing more.
func TestTheStepsOfAWorkspaceReachTheArtifactEndpoint(t *testing.T) {
	ep := &ArtifactEndpoint{Namespace: "ergon-system", ClusterIP: "10.96.0.20", Ports: []int32{443, 9443}}
	for _, egress := range []ergonv1alpha1.EgressPolicy{ergonv1alpha1.EgressDeny, ergonv1alpha1.EgressCIDRs, ergonv1alpha1.EgressAllow} {
		ws := &ergonv1alpha1.Workspace{}
		ws.Name, ws.Namespace, ws.UID = "desk", "team", "uid-1"
		ws.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: egress}
		if egress == ergonv1alpha1.EgressCIDRs {
			ws.Spec.Network.CIDRs = []string{"192.0.2.0/24"}
		}
		without, with := NetworkPolicy(ws, nil).Spec, NetworkPolicy(ws, ep).Spec
		if egress == ergonv1alpha1.EgressAllow {
			if !reflect.DeepEqual(without, with) {
				t.Errorf("Allow: the endpoint changed the policy: %+v", with.Egress)
			}
			continue
		}
		if len(with.Egress) != len(without.Egress)+1 || !reflect.DeepEqual(with.Egress[:len(without.Egress)], without.Egress) {
			t.Fatalf("%s: egress %+v, want the Workspace's rules and one more", egress, with.Egress)
		}
		rule := with.Egress[len(with.Egress)-1]
		if len(rule.To) != 2 || rule.To[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "ergon-system" ||
			rule.To[1].IPBlock.CIDR != "10.96.0.20/32" {
			t.Errorf("%s: the endpoint's peers are %+v", egress, rule.To)
		}
		if len(rule.Ports) != 2 || rule.Ports[0].Port.IntValue() != 443 || rule.Ports[1].Port.IntValue() != 9443 ||
			*rule.Ports[0].Protocol != corev1.ProtocolTCP {
			t.Errorf("%s: the endpoint's ports are %+v", egress, rule.Ports)
		}
	}
}
