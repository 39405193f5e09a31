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
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Item 9 of the hardening issue: no unbounded amplification. runCompleted Triggers that chain
// Scenes into a cycle would start Runs without end; admission refuses the Trigger that closes
// it, however many Triggers the cycle goes through.

func chainTrigger(ns, name, from, to string) *ergonv1alpha1.Trigger {
	return &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef:     corev1.LocalObjectReference{Name: to},
			RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: from}},
		}}
}

var _ = Describe("Amplification (issue item 9)", func() {
	It("refuses a runCompleted Trigger that closes a cycle through three Triggers, naming the cycle", func() {
		ns := newNamespace()
		mallory := userClient(ns, "mallory", roleErgonEditor)
		for _, s := range []string{"alpha", "beta", "gamma", "delta"} {
			createScene(mallory, ns, s, containerStep("work"))
		}
		Expect(mallory.Create(ctx, chainTrigger(ns, "a-to-b", "alpha", "beta"))).To(Succeed())
		Expect(mallory.Create(ctx, chainTrigger(ns, "b-to-c", "beta", "gamma"))).To(Succeed())

		err := mallory.Create(ctx, chainTrigger(ns, "c-to-a", "gamma", "alpha"))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the Trigger that closes the cycle is refused: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.runCompleted.sceneRef.name"))
		Expect(err.Error()).To(ContainSubstring(
			"Trigger c-to-a (Scene gamma -> alpha), then Trigger a-to-b (Scene alpha -> beta), then Trigger b-to-c (Scene beta -> gamma)"))

		By("a suspended cycle is allowed, and resuming it is refused")
		suspended := chainTrigger(ns, "c-to-a", "gamma", "alpha")
		suspended.Spec.Suspend = new(true)
		Expect(mallory.Create(ctx, suspended)).To(Succeed())
		resume := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
		err = mallory.Patch(ctx, suspended, resume)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "resuming closes the cycle: %v", err)

		By("nor can a member of the cycle be pointed back at it")
		Expect(mallory.Delete(ctx, suspended)).To(Succeed())
		Expect(mallory.Create(ctx, chainTrigger(ns, "c-to-d", "gamma", "delta"))).To(Succeed())
		moved := chainTrigger(ns, "c-to-d", "gamma", "delta")
		err = mallory.Patch(ctx, moved, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"sceneRef":{"name":"alpha"}}}`)))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("Trigger c-to-d (Scene gamma -> alpha)"))
	})

	It("keeps Triggers of other namespaces out of the cycle", func() {
		ns, other := newNamespace(), newNamespace()
		mallory := userClient(ns, "mallory", roleErgonEditor)
		bindRole(other, "mallory", roleErgonEditor)
		// An ergon-editor may name only Scenes that exist (their Secrets are checked).
		createScene(mallory, other, "beta", containerStep("work"))
		createScene(mallory, ns, "alpha", containerStep("work"))
		Expect(mallory.Create(ctx, chainTrigger(other, "a-to-b", "alpha", "beta"))).To(Succeed())
		Expect(mallory.Create(ctx, chainTrigger(ns, "b-to-a", "beta", "alpha"))).To(Succeed(),
			fmt.Sprintf("a Run of %s/alpha never starts one in %s", other, ns))
	})
})
