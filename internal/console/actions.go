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

package console

import (
	"encoding/json"
	"errors"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/kubectlergon"
	"github.com/ergon-dev/ergon/internal/naming"
)

// maxBodyBytes bounds a write's JSON body.
const maxBodyBytes = 64 << 10

func decodeBody(w http.ResponseWriter, r *http.Request, into any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(into); err != nil {
		writeError(w, http.StatusBadRequest, errors.New("the request body is not the JSON expected: "+err.Error()))
		return false
	}
	return true
}

// decide sets a Gate's decision, or adds a vote, as the viewer, with the same patch as
// kubectl ergon approve: the webhook stamps who decided and refuses whoever may not, and its
// refusal reaches the page verbatim.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, v *viewer) {
	var body struct {
		Option  string                `json:"option"`
		Comment string                `json:"comment"`
		Values  *apiextensionsv1.JSON `json:"values,omitempty"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Option == "" && body.Values == nil {
		writeError(w, http.StatusBadRequest, errors.New("option: choose one of the Gate's options"))
		return
	}
	key := client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	gate, err := kubectlergon.DecideGate(r.Context(), v.c, key, body.Option, body.Comment, body.Values)
	var refused *kubectlergon.RefusedError
	switch {
	case errors.As(err, &refused):
		writeError(w, http.StatusConflict, err)
	case err != nil:
		writeAPIError(w, err)
	default:
		slim(gate)
		writeJSON(w, gate)
	}
}

// suspend suspends or resumes a Trigger as the viewer.
func (s *Server) suspend(w http.ResponseWriter, r *http.Request, v *viewer) {
	var body struct {
		Suspend bool `json:"suspend"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"suspend": body.Suspend}})
	if err := v.c.Patch(r.Context(), t, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		writeAPIError(w, err)
		return
	}
	slim(t)
	writeJSON(w, t)
}

// runTrigger starts a Run of a Trigger's Scene with its params now, created by the viewer
// (so admission records them as its creator) and labelled with the Trigger.
func (s *Server) runTrigger(w http.ResponseWriter, r *http.Request, v *viewer) {
	t := &ergonv1alpha1.Trigger{}
	if err := v.c.Get(r.Context(), client.ObjectKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}, t); err != nil {
		writeAPIError(w, err)
		return
	}
	run := &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: naming.Join(50, t.Name) + "-",
			Namespace:    t.Namespace,
			Labels: map[string]string{
				ergonv1alpha1.LabelTrigger: naming.LabelValue(t.Name),
				ergonv1alpha1.LabelScene:   naming.LabelValue(t.Spec.SceneRef.Name),
			},
		},
		Spec: ergonv1alpha1.RunSpec{SceneRef: t.Spec.SceneRef, Params: t.Spec.Params},
	}
	s.createRun(w, r, v, run)
}

// startScene starts a Run of a Scene with the params of the start form.
func (s *Server) startScene(w http.ResponseWriter, r *http.Request, v *viewer) {
	var body struct {
		Params map[string]string `json:"params"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	for k, val := range body.Params {
		if val == "" {
			delete(body.Params, k) // an empty field takes the param's default
		}
	}
	if len(body.Params) == 0 {
		body.Params = nil
	}
	name := r.PathValue("name")
	run := &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{GenerateName: naming.Join(50, name) + "-", Namespace: r.PathValue("ns"),
			Labels: map[string]string{ergonv1alpha1.LabelScene: naming.LabelValue(name)}},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: name}, Params: body.Params},
	}
	s.createRun(w, r, v, run)
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, v *viewer, run *ergonv1alpha1.Run) {
	if err := v.c.Create(r.Context(), run); err != nil {
		writeAPIError(w, err)
		return
	}
	slim(run)
	writeJSON(w, Summarize(run))
}

// cancelRun sets spec.cancel on a Run as the viewer.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, v *viewer) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}}
	if err := v.c.Patch(r.Context(), run, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cancel":true}}`))); err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, Summarize(run))
}
