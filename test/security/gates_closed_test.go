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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("A Gate whose Run ended", func() {
	It("is Closed, and an approver can no longer decide it or vote on it", func() {
		ns := newNamespace()
		vera := userClient(ns, "vera", roleEdit)
		alice := userClient(ns, "alice", roleApprover)
		scene := gateScene(ns, "release", ergonv1alpha1.GateStep{})
		run := startRun(vera, ns, "deploy", scene)
		gate := gateOf(ns, "deploy")
		Eventually(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).Should(Equal(ergonv1alpha1.GatePending))

		Expect(vera.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		Eventually(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).
			WithTimeout(30 * time.Second).Should(Equal(ergonv1alpha1.GateClosed))

		refusedWith(patchGate(alice, gate, types.MergePatchType, `{"spec":{"decision":{"option":"approve"}}}`),
			"spec.decision", "is Closed", "its Run deploy ended before anyone decided", "can no longer be decided")
		refusedWith(vote(alice, gate, "reject"), "spec.approvals", "is Closed")
		closed := reread(gate)
		Expect(closed.Spec.Decision).To(BeNil())
		Expect(closed.Spec.Approvals).To(BeEmpty())
		Expect(closed.Status.Phase).To(Equal(ergonv1alpha1.GateClosed))
	})
})
