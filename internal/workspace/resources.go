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

// Package workspace holds the pure logic of Workspaces: the objects a Workspace becomes (its
// pod, volume claim and NetworkPolicy), the hardening every pod that works on a Workspace's
// volume shares, and the plan of the Workspace controller. Nothing here talks to the API.
package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/podsecurity"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// The pieces of a workspace pod.
const (
	// Container is the name of the workspace pod's container.
	Container = "workspace"
	// MountPath is where the Workspace's volume is mounted, the only persistent writable path.
	MountPath = stepcontract.DefaultWorkspace
	// VolumeName is the name of the volume of the Workspace's claim in a pod.
	VolumeName = "workspace"
	// UID is the user and group every pod that works on a Workspace's volume runs as, and the
	// fsGroup that owns the volume's files.
	UID = 1000
	// TmpSize bounds /tmp, an emptyDir on the node's disk.
	TmpSize = "1Gi"

	binVolume  = "ergon-bin"
	tmpVolume  = "tmp"
	initName   = "ergon-init"
	entrypoint = stepcontract.BinDir + "/entrypoint"
	// entrypointInImage is where Ergon's image keeps the entrypoint binary.
	entrypointInImage = "/ergon-entrypoint"

	// AnnotationPodSpecHash on a workspace pod is the hash of the pod spec it was built
	// from; a pod whose hash differs from the current spec's is replaced.
	AnnotationPodSpecHash = ergonv1alpha1.AnnotationPrefix + "pod-spec-hash"
)

// EntrypointCommand is the command the workspace container runs: Ergon's entrypoint, copied
// in by the init container, waiting for a stop signal, so any image works, shell or not.
// Files are read with the same binary (see Files).
var EntrypointCommand = []string{entrypoint, "idle"}

// Labels are the labels of a Workspace's pod, claim and NetworkPolicy, and of the step pods
// bound to it. LabelWorkspaceUID is what the NetworkPolicy selects, so the step pods bound to
// the Workspace get the same policy as its pod, and no other Workspace's policy: the UID is
// one Workspace's alone, where a name shortened into a label value may be another's too.
// LabelWorkspace, the name, is for people.
func Labels(ws *ergonv1alpha1.Workspace) map[string]string {
	return map[string]string{
		ergonv1alpha1.LabelManagedBy:    ergonv1alpha1.ManagedByErgon,
		ergonv1alpha1.LabelWorkspace:    naming.LabelValue(ws.Name),
		ergonv1alpha1.LabelWorkspaceUID: string(ws.UID),
	}
}

// ObjectName names the Workspace's pod, claim, NetworkPolicy and Lease, after its UID
// (naming.WorkspaceObjectName): nobody can take the names before the Workspace exists.
func ObjectName(ws *ergonv1alpha1.Workspace) string {
	return naming.WorkspaceObjectName(string(ws.UID))
}

// OwnerRef makes the Workspace the controlling owner of an object it makes.
func OwnerRef(ws *ergonv1alpha1.Workspace) metav1.OwnerReference {
	return *metav1.NewControllerRef(ws, ergonv1alpha1.GroupVersion.WithKind("Workspace"))
}

// Controls reports whether the Workspace (by UID, not by name) is the controlling owner of obj.
func Controls(ws *ergonv1alpha1.Workspace, obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == ws.UID
}

// PodSecurityContext is the pod security context of every pod that works on a Workspace's
// volume: uid and gid 1000, fsGroup 1000 so the volume's files are the user's, the runtime's
// default seccomp profile (Pod Security "restricted").
func PodSecurityContext() *corev1.PodSecurityContext {
	sc := podsecurity.Pod(UID)
	sc.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	return sc
}

// Volumes are the Workspace's volume (its claim, of the given name) and a size-limited /tmp.
func Volumes(claim string) []corev1.Volume {
	return []corev1.Volume{
		{Name: VolumeName, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: claim,
		}}},
		{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: new(resource.MustParse(TmpSize)),
		}}},
	}
}

// VolumeMounts mount Volumes: the Workspace's volume at /workspace, /tmp.
func VolumeMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: VolumeName, MountPath: MountPath}, {Name: tmpVolume, MountPath: "/tmp"}}
}

// Harden makes a pod spec one that may work on a Workspace's volume, the one hardening of
// the Workspace's pod and of every step pod bound to it (Pod Security "restricted"): no
// Kubernetes credentials, no service links, no host namespaces, user namespaces or host
// ports, the Workspace's runtime class, and the restricted security contexts on every pod
// and init container (uid and gid 1000, fsGroup 1000, read-only root, no privilege
// escalation, every capability dropped, the runtime's default seccomp profile). It only
// tightens what it touches and adds no volumes: the caller mounts the Workspace's.
func Harden(spec *corev1.PodSpec, ws *ergonv1alpha1.Workspace) {
	spec.AutomountServiceAccountToken = new(false)
	spec.EnableServiceLinks = new(false)
	spec.HostNetwork, spec.HostPID, spec.HostIPC, spec.HostUsers = false, false, false, nil
	spec.RuntimeClassName = ws.Spec.RuntimeClassName
	spec.SecurityContext = PodSecurityContext()
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			cs[i].SecurityContext = podsecurity.Container()
			for j := range cs[i].Ports {
				cs[i].Ports[j].HostPort, cs[i].Ports[j].HostIP = 0, ""
			}
		}
	}
}

// Pod builds the workspace pod: the Workspace's image running Ergon's entrypoint (copied in
// from entrypointImage by an init container), on the Workspace's volume (the claim of the
// given name) and /tmp, hardened by Harden, with the spec's resources and env and HOME on the
// volume.
func Pod(ws *ergonv1alpha1.Workspace, entrypointImage, claim string) *corev1.Pod {
	env := append([]corev1.EnvVar{{Name: "HOME", Value: MountPath}}, ws.Spec.Env...)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ObjectName(ws), Namespace: ws.Namespace, Labels: Labels(ws),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(ws)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Volumes: append([]corev1.Volume{{Name: binVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				SizeLimit: new(resource.MustParse("64Mi")),
			}}}}, Volumes(claim)...),
			InitContainers: []corev1.Container{{
				Name: initName, Image: entrypointImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{entrypointInImage, "copy", entrypoint},
				VolumeMounts: []corev1.VolumeMount{{Name: binVolume, MountPath: stepcontract.BinDir}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
			Containers: []corev1.Container{{
				Name: Container, Image: ws.Spec.Image, Command: EntrypointCommand,
				Env: env, WorkingDir: MountPath, Resources: *ws.Spec.Resources.DeepCopy(),
				VolumeMounts: append(VolumeMounts(), corev1.VolumeMount{Name: binVolume, MountPath: stepcontract.BinDir, ReadOnly: true}),
			}},
		},
	}
	Harden(&pod.Spec, ws)
	pod.Annotations = map[string]string{AnnotationPodSpecHash: specHash(&pod.Spec)}
	return pod
}

// specHash is a short hash of a pod spec as built, before the API server defaults it.
func specHash(spec *corev1.PodSpec) string {
	// Marshalling a pod spec cannot fail.
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Claim builds the Workspace's PersistentVolumeClaim, controlled by the Workspace: that is
// how the controller knows the claim for its own until the Workspace's status records the
// claim's UID. Under reclaimPolicy Retain the controller then takes the owner reference off
// (see Decide), so that no garbage collection, a foreground deletion included, can delete it.
func Claim(ws *ergonv1alpha1.Workspace) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: ObjectName(ws), Namespace: ws.Namespace, Labels: Labels(ws),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(ws)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ws.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: ws.Spec.Storage.Size,
			}},
		},
	}
}

// ArtifactEndpoint is Ergon's artifact endpoint as the NetworkPolicy of a Workspace lets the
// step pods bound to it reach it, whatever its egress (docs/artifacts.md): the manager's
// namespace and, once known, its Service's address, on the Service's port and the webhook
// server's (policies may see a connection before or after the Service's address translation).
type ArtifactEndpoint struct {
	Namespace string
	ClusterIP string
	Ports     []int32
}

// NetworkPolicy builds the Workspace's NetworkPolicy over the pods labelled with its UID (its
// pod and the step pods bound to it): every ingress denied; egress as spec.network.egress
// says: Deny allows nothing (DNS included, so name lookups fail too), Allow everything, CIDRs
// only the listed blocks; Deny and CIDRs allow Ergon's artifact endpoint besides, when the
// manager keeps artifacts (ep not nil), by address, so no name lookup is needed.
func NetworkPolicy(ws *ergonv1alpha1.Workspace, ep *ArtifactEndpoint) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: ObjectName(ws), Namespace: ws.Namespace, Labels: Labels(ws),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(ws)},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				ergonv1alpha1.LabelWorkspaceUID: string(ws.UID),
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{},
			Egress:      []networkingv1.NetworkPolicyEgressRule{},
		},
	}
	switch Egress(ws) {
	case ergonv1alpha1.EgressAllow:
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	case ergonv1alpha1.EgressCIDRs:
		rule := networkingv1.NetworkPolicyEgressRule{}
		for _, cidr := range ws.Spec.Network.CIDRs {
			rule.To = append(rule.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
		}
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{rule}
	}
	if ep != nil && Egress(ws) != ergonv1alpha1.EgressAllow {
		rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ep.Namespace}}}}}
		if ep.ClusterIP != "" {
			rule.To = append(rule.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: ep.ClusterIP + "/32"}})
		}
		tcp := corev1.ProtocolTCP
		for _, port := range ep.Ports {
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: new(intstr.FromInt32(port))})
		}
		np.Spec.Egress = append(np.Spec.Egress, rule)
	}
	return np
}

// LegacyNetworkPolicySpec is the spec of the NetworkPolicy an earlier version made for the
// Workspace (under naming.LegacyWorkspaceName), kept while step pods that version bound to the
// Workspace run: the same rules over the pods labelled with the Workspace's name and not with
// any Workspace's UID. Those are the only pods a name can still select; a pod bound since
// carries a UID, so no other Workspace's old policy reaches it.
func LegacyNetworkPolicySpec(ws *ergonv1alpha1.Workspace) networkingv1.NetworkPolicySpec {
	spec := NetworkPolicy(ws, nil).Spec
	spec.PodSelector = metav1.LabelSelector{
		MatchLabels: map[string]string{ergonv1alpha1.LabelWorkspace: naming.LabelValue(ws.Name)},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: ergonv1alpha1.LabelWorkspaceUID, Operator: metav1.LabelSelectorOpDoesNotExist,
		}},
	}
	return spec
}

// Egress is the Workspace's egress policy, Deny when unset.
func Egress(ws *ergonv1alpha1.Workspace) ergonv1alpha1.EgressPolicy {
	if ws.Spec.Network == nil || ws.Spec.Network.Egress == "" {
		return ergonv1alpha1.EgressDeny
	}
	return ws.Spec.Network.Egress
}

// StepEnv is the environment of a step pod bound to the Workspace: the Workspace's env, then
// the step's own (Ergon's variables, its params, its env), which wins where both name a
// variable. The Workspace's entries come first so that the step's may refer to them as
// $(NAME). They are copied as written: a value by value, a secretKeyRef or configMapKeyRef by
// reference, for the kubelet to resolve; no Secret is read here.
func StepEnv(ws *ergonv1alpha1.Workspace, step []corev1.EnvVar) []corev1.EnvVar {
	own := make(map[string]bool, len(step))
	for _, e := range step {
		own[e.Name] = true
	}
	env := make([]corev1.EnvVar, 0, len(ws.Spec.Env)+len(step))
	for _, e := range ws.Spec.Env {
		if !own[e.Name] {
			env = append(env, *e.DeepCopy())
		}
	}
	return append(env, step...)
}

// ToolEnv names the variables of the Workspace's env that an agent's tools see: those with a
// value, or from a ConfigMap or the pod's own fields. Variables from Secrets are the step's
// (its program may use them), never a tool's: what the model runs must not read a secret.
func ToolEnv(ws *ergonv1alpha1.Workspace) []string {
	var names []string
	for _, e := range ws.Spec.Env {
		if (e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil) || strings.HasPrefix(e.Name, "ERGON_") {
			continue
		}
		names = append(names, e.Name)
	}
	return names
}
