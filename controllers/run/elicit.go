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

package run

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=patch

// The questions of MCP servers (elicitation; internal/planner/elicit.go decides): a running
// agent attempt lists the questions it waits on in its progress line, which gather
// reads (gatherAgents). Each opens an input Gate; once decided, its answer is written into the waiting pod's
// annotationAnswers, which the downward API projects into the file the runtime reads. The pod
// has no credentials, so this annotation is the only way back into it.

// annotationAnswers on an agent pod holds the answers to its questions, by question id.
const annotationAnswers = "agent.ergon.dev/answers"

// Anyone who may patch pods in the namespace may write that annotation too, so each answer is
// signed (Ed25519) for its pod and question, and the pod trusts only the public key in its
// environment, which nobody can change once the pod exists. The key lives in the manager's
// memory: a question that waits across a manager restart cannot be answered, and fails.

// signingKey is the manager's key for answers.
func (r *RunReconciler) signingKey() ed25519.PrivateKey {
	r.answerKeyOnce.Do(func() {
		_, r.answerKey, _ = ed25519.GenerateKey(nil) // crypto/rand: does not fail
	})
	return r.answerKey
}

// pinAnswerKey gives an agent pod whose MCP servers may ask (planner.AsksPeople) the public
// key its answers are signed with, and its own UID, which each signature covers.
func (a *runActor) pinAnswerKey(pod *corev1.Pod) {
	pub := a.answerKey.Public().(ed25519.PublicKey)
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: stepcontract.EnvAnswerKey, Value: base64.StdEncoding.EncodeToString(pub)},
		corev1.EnvVar{Name: stepcontract.EnvPodUID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}})
}

// handAnswers writes the answers the plan hands back (planner.ObserveAgents) into their
// waiting pods' annotation, each signed for its pod and question. The patch names the pod's
// UID, which is immutable: a pod that replaced the attempt's under its name refuses it instead
// of taking the answers, and one that is gone waits for nothing.
func (a *runActor) handAnswers(ctx context.Context, run *ergonv1alpha1.Run, plan *planner.Plan) error {
	for _, req := range plan.Answers {
		signed := make(map[string]agentspec.Answer, len(req.Answers))
		for id, answer := range req.Answers {
			answer.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(a.answerKey, agentspec.AnswerPayload(req.UID, id, answer)))
			signed[id] = answer
		}
		b, _ := json.Marshal(signed) // plain data
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": req.UID,
			"annotations": map[string]string{annotationAnswers: string(b)}}})
		pod := &corev1.Pod{}
		pod.Name, pod.Namespace = req.Pod, run.Namespace
		err := a.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			return fmt.Errorf("handing answers to the waiting agent pod %s: %w", req.Pod, err)
		}
	}
	return nil
}
