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
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/artifacts"
)

var _ = Describe("Artifacts on a real cluster", func() {
	It("hand a 20 MiB file and an SVG from one step to the next through the manager's store, checked by digest", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		render := busyboxStep("render", `set -e
head -c 20971520 /dev/urandom > "$ERGON_ARTIFACTS/data.bin"
mkdir -p /tmp/out
printf '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>' > /tmp/out/chart.svg
sha256sum "$ERGON_ARTIFACTS/data.bin" | cut -c1-64 | tr -d '\n' > "$ERGON_OUTPUT"`)
		render.Artifacts = []ergonv1alpha1.Artifact{{Name: "data.bin"},
			{Name: "chart.svg", Path: "/tmp/out/chart.svg", MediaType: "image/svg+xml"}}
		use := busyboxStep("use", `set -e
grep -q '<svg' /tmp/in/chart.svg
sha256sum "$ERGON_INPUT_ARTIFACTS/render/data.bin" | cut -c1-64 | tr -d '\n' > "$ERGON_OUTPUT"`, "render")
		use.InputArtifacts = []ergonv1alpha1.InputArtifact{{Step: "render", Name: "data.bin"},
			{Step: "render", Name: "chart.svg", Path: "/tmp/in/chart.svg"}}
		run := finished(ctx, runScene(ctx, ns, "pages", render, use))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)

		made := stepOf(run, "render")
		sum := made.Output.Preview
		Expect(sum).To(HaveLen(64))
		Expect(stepOf(run, "use").Output.Preview).To(Equal(sum), "the next step read the same bytes")
		Expect(made.Artifacts).To(HaveLen(2))
		data, chart := made.Artifacts[0], made.Artifacts[1]
		Expect(data.Name).To(Equal("data.bin"))
		Expect(data.Size).To(BeEquivalentTo(20 << 20))
		Expect(data.SHA256).To(Equal(sum))
		Expect(chart.MediaType).To(Equal("image/svg+xml"))
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		Expect(data.Key).To(HavePrefix(artifacts.RunPrefix(nsObj.UID, run.UID) + "render/-/1."))

		By("the Run's status and Events carry no grant and no content")
		raw := strings.Join([]string{made.Message, made.Output.Preview}, " ")
		Expect(raw).NotTo(ContainSubstring(artifacts.PathBlobs))
	})

	It("show an agent step an image another step made, as an image part of its model request", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, `rules:
- match: {imageContains: "data:image/png;base64,iVBORw0KGgo"}
  reply: {content: "I see a PNG"}
- reply: {content: "I see no image"}
`)
		// A 1x1 PNG, written by a shell step.
		draw := busyboxStep("draw", `echo iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg== `+
			`| base64 -d > "$ERGON_ARTIFACTS/dot.png"`)
		draw.Artifacts = []ergonv1alpha1.Artifact{{Name: "dot.png", MediaType: "image/png"}}
		look := ergonv1alpha1.Step{Name: "look", DependsOn: []string{"draw"},
			Agent:          &ergonv1alpha1.AgentStep{Prompt: "What do you see?"},
			InputArtifacts: []ergonv1alpha1.InputArtifact{{Step: "draw", Name: "dot.png"}}}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "looking", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{draw, look}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "looking-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "looking"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)
		Expect(stepOf(run, "look").Output.Preview).To(Equal("I see a PNG"))
	})

	It("move between steps bound to a Workspace whose egress is denied, through the policy's one opening", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ws := e2eWorkspace(ns, "desk", "e2e-owner@example.org") // egress Deny: no DNS either
		Expect(k8sClient.Create(ctx, ws)).To(Succeed())
		write := busyboxStep("write", `echo "from the desk" > /workspace/note.txt`)
		write.Artifacts = []ergonv1alpha1.Artifact{{Name: "note.txt", Path: "/workspace/note.txt"}}
		read := busyboxStep("read", `cat "$ERGON_INPUT_ARTIFACTS/write/note.txt" > "$ERGON_OUTPUT"`, "write")
		read.InputArtifacts = []ergonv1alpha1.InputArtifact{{Step: "write", Name: "note.txt"}}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "desk", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Workspace: &corev1.LocalObjectReference{Name: "desk"},
				Steps: []ergonv1alpha1.Step{write, read}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "desk-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "desk"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)
		Expect(stepOf(run, "read").Output.Preview).To(Equal("from the desk\n"))
	})

	It("fail a step whose command did not write a declared artifact, naming it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		lazy := busyboxStep("lazy", "true")
		lazy.Artifacts = []ergonv1alpha1.Artifact{{Name: "report.md"}}
		run := finished(ctx, runScene(ctx, ns, "lazy", lazy))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		s := stepOf(run, "lazy")
		Expect(s.Reason).To(Equal(ergonv1alpha1.ReasonArtifactMissing))
		Expect(s.Message).To(ContainSubstring("did not write artifact report.md to /ergon/artifacts/report.md"))
	})
})
