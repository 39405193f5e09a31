//go:build e2e

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

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// workspaceImage is the image config/samples gives Alice's Workspace: on the local cluster, a
// busybox with sh and no bash.
const workspaceImage = "example.org/workspace:1.0"

// workspaceShellCommand runs the script the agent wrote, reads what it left, tries to open the
// environment of the entrypoint (PID 1) and of the agent runtime (the shell's parent), and
// prints the shell's own variables.
const workspaceShellCommand = "sh bin/hello.sh && read -r line < out.txt && echo line=$line; " +
	"(exec 3< /proc/1/environ) 2>/dev/null && echo PID1-READABLE || echo PID1-DENIED; " +
	"(exec 3< /proc/$PPID/environ) 2>/dev/null && echo AGENT-READABLE || echo AGENT-DENIED; set"

// workspaceLLMScript plays a model that writes a script into the Workspace and runs it, and
// checks from the shell that the API key cannot be read from the entrypoint's or the agent's
// environment; and, for a second Scene, one that reads the file the script left.
const workspaceLLMScript = `rules:
- match: {lastRole: user, lastContains: "WRITE"}
  reply:
    toolCalls:
    - {name: write_file, arguments: '{"path": "bin/hello.sh", "content": "echo hello-from-workspace > /workspace/out.txt\n"}'}
- match: {lastRole: tool, lastContains: "wrote"}
  reply:
    toolCalls:
    - name: shell
      arguments: '{"command": "` + workspaceShellCommand + `"}'
- match: {lastRole: tool, lastContains: "line=hello-from-workspace"}
  reply: {content: "wrote and ran the script"}
- match: {lastRole: user, lastContains: "READ"}
  reply:
    toolCalls:
    - {name: read_file, arguments: '{"path": "out.txt"}'}
- match: {lastRole: tool, lastContains: "hello-from-workspace"}
  reply: {content: "the file says hello-from-workspace"}
- match: {lastRole: tool}
  reply: {content: "UNEXPECTED tool result"}
`

// agentWorkspace creates a Workspace whose steps may reach their model in the cluster, and
// waits for the Workspace controller to make its volume claim.
func agentWorkspace(ctx SpecContext, ns, name, user string) {
	ws := e2eWorkspace(ns, name, user)
	ws.Spec.Image = workspaceImage
	ws.Spec.Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	ws.Spec.Storage.Size = resource.MustParse("64Mi")
	// The agent steps reach their model in the cluster.
	ws.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressAllow}
	Expect(k8sClient.Create(ctx, ws)).To(Succeed())
	Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: workspace.ObjectName(ws)},
			&corev1.PersistentVolumeClaim{})
	}).WithTimeout(30*time.Second).Should(Succeed(), "the Workspace controller makes the volume claim")
}

func agentOn(name, prompt string, tools ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Timeout: &metav1.Duration{Duration: 2 * time.Minute},
		Agent: &ergonv1alpha1.AgentStep{Prompt: prompt, Tools: builtins(tools...), MaxTurns: new(int32(5))}}
}

func runOf(ctx SpecContext, c client.Client, ns, name, scene string) (*ergonv1alpha1.Run, error) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
	return run, c.Create(ctx, run)
}

var _ = Describe("Steps inside a Workspace on a real cluster", func() {
	It("lets an agent write and run a script in the Workspace, a later Run read its file, and no tool read the API key",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			deployFakeLLMScript(ctx, ns, workspaceLLMScript)
			const apiKey = "e2e-workspace-key-never-shown"
			Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns},
				StringData: map[string]string{"apiKey": apiKey}})).To(Succeed())
			agentWorkspace(ctx, ns, "dev", "e2e-dev@example.org")
			models := map[string]ergonv1alpha1.ModelSpec{"default": {
				BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake",
				APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "apiKey"}}}
			for name, step := range map[string]ergonv1alpha1.Step{
				"write": agentOn("edit", "WRITE a script and run it.", ergonv1alpha1.ToolWriteFile, ergonv1alpha1.ToolShell),
				"read":  agentOn("look", "READ what the script left.", ergonv1alpha1.ToolReadFile),
			} {
				Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: ergonv1alpha1.SceneSpec{Models: models, Workspace: &corev1.LocalObjectReference{Name: "dev"},
						Steps: []ergonv1alpha1.Step{step}}})).To(Succeed())
			}

			run, err := runOf(ctx, k8sClient, ns, "write-1", "write")
			Expect(err).NotTo(HaveOccurred())
			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			edit := stepOf(run, "edit")
			Expect(edit.Output.Preview).To(Equal("wrote and ran the script"))
			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: edit.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
			transcript := cm.Data["transcript"]
			GinkgoWriter.Printf("transcript of write-1/edit:\n%s\n", transcript)
			Expect(transcript).To(ContainSubstring("line=hello-from-workspace"))
			Expect(transcript).To(ContainSubstring("PID1-DENIED"))
			Expect(transcript).To(ContainSubstring("AGENT-DENIED"))
			Expect(transcript).NotTo(ContainSubstring("ERGON_AGENT_API_KEY"), "the shell's environment holds the key's variable")
			Expect(transcript).NotTo(ContainSubstring(apiKey))

			run, err = runOf(ctx, k8sClient, ns, "read-1", "read")
			Expect(err).NotTo(HaveOccurred())
			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			Expect(stepOf(run, "look").Output.Preview).To(Equal("the file says hello-from-workspace"))
		})

	It("never runs two writing steps at once, and refuses a Run by someone who is not the Workspace's user", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agentWorkspace(ctx, ns, "dev", "e2e-owner@example.org")
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "append", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Workspace: &corev1.LocalObjectReference{Name: "dev"}, Steps: []ergonv1alpha1.Step{
				busyboxStep("append", `echo "start $ERGON_RUN" >> log; sleep 3; echo "end $ERGON_RUN" >> log; cat log > "$ERGON_OUTPUT"`),
			}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		By("refusing a Run by a tenant who may edit the namespace but is not the Workspace's user")
		_, err := runOf(ctx, as(ctx, ns, "e2e-mallory", "edit"), ns, "stolen", "append")
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`Workspace "dev"`))
		Expect(err.Error()).To(ContainSubstring("spec.sceneRef.name"))

		a, err := runOf(ctx, k8sClient, ns, "first", "append")
		Expect(err).NotTo(HaveOccurred())
		b, err := runOf(ctx, k8sClient, ns, "second", "append")
		Expect(err).NotTo(HaveOccurred())
		a, b = finished(ctx, a), finished(ctx, b)
		Expect(a.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", a.Status)
		Expect(b.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", b.Status)
		sa, sb := stepOf(a, "append"), stepOf(b, "append")
		if sb.StartedAt.Before(sa.StartedAt) {
			sa, sb = sb, sa
		}
		Expect(sb.StartedAt.Time).NotTo(BeTemporally("<", sa.FinishedAt.Time),
			"the second writer started at %s, before the first finished at %s", sb.StartedAt, sa.FinishedAt)
		GinkgoWriter.Printf("first writer %s..%s, second %s..%s\n", sa.StartedAt, sa.FinishedAt, sb.StartedAt, sb.FinishedAt)
		// The log, as the second writer left it: the two never interleave.
		last := sb.Output.Preview
		Expect(last).To(MatchRegexp(`^start (first|second)\nend (first|second)\nstart (first|second)\nend (first|second)\n$`))
	})
})

// builtins are the AgentTools of built-in tools, by name.
func builtins(names ...string) []ergonv1alpha1.AgentTool {
	tools := make([]ergonv1alpha1.AgentTool, 0, len(names))
	for _, n := range names {
		tools = append(tools, ergonv1alpha1.AgentTool{Name: n})
	}
	return tools
}
