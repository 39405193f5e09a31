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

package protocols

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/humaninput"
)

// Fields of the form that asks an approval Gate's decision.
const (
	fieldDecision = "decision"
	fieldComment  = "comment"
	optionReject  = "reject"
)

// gateForm is the form a person answers a Gate with, as a flat JSON Schema object (all an
// elicitation form may ask): a Gate without input asks for one of its options and a comment;
// an input Gate asks its own fields. ok is false for an input Gate whose fields nest objects
// or arrays, which a form cannot ask: that Gate is answered with kubectl or the console.
func gateForm(g *ergonv1alpha1.Gate) (map[string]any, bool) {
	if g.Spec.Input == nil {
		options := g.Spec.Options
		if len(options) == 0 {
			options = []string{"approve", optionReject}
		}
		const typ, str = "type", "string"
		return map[string]any{
			typ: "object",
			"properties": map[string]any{
				fieldDecision: map[string]any{typ: str, "title": "Decision", "enum": options},
				fieldComment:  map[string]any{typ: str, "title": "Comment"},
			},
			"required": []string{fieldDecision},
		}, true
	}
	form, errs := humaninput.Parse(g.Spec.Input.Raw, field.NewPath("input"))
	if len(errs) > 0 || form.Type != humaninput.TypeObject {
		return nil, false
	}
	for _, f := range form.Properties {
		if f.Type == humaninput.TypeObject || f.Type == humaninput.TypeArray {
			return nil, false
		}
	}
	var schema map[string]any
	if json.Unmarshal(g.Spec.Input.Raw, &schema) != nil {
		return nil, false
	}
	return schema, true
}

// formMessage is what a form says of the Gate it answers.
func formMessage(g *ergonv1alpha1.Gate) string {
	msg := strings.TrimSpace(g.Spec.Message)
	if msg == "" {
		msg = "A step waits for a decision."
	}
	return fmt.Sprintf("%s\n(Gate %s/%s of Run %s, step %s)", msg, g.Namespace, g.Name, g.Spec.RunRef.Name, g.Spec.Step)
}

// answerOf is the answer an accepted form gives a Gate: its decision and comment, or, for an
// input Gate, its values (the webhook checks them against the Gate's schema).
func answerOf(g *ergonv1alpha1.Gate, content map[string]any) (answer, error) {
	if g.Spec.Input != nil {
		b, err := json.Marshal(content)
		if err != nil {
			return answer{}, err
		}
		return answer{Values: &apiextensionsv1.JSON{Raw: b}}, nil
	}
	option, _ := content[fieldDecision].(string)
	if option == "" {
		return answer{}, fmt.Errorf("the form's %s is empty: choose one of %v", fieldDecision, g.Spec.Options)
	}
	comment, _ := content[fieldComment].(string)
	return answer{Option: option, Comment: comment}, nil
}

// declined is the answer of a person who declined to answer a Gate: its reject option when it
// has one; ok is false when it has none, and the Gate stays open.
func declined(g *ergonv1alpha1.Gate) (answer, bool) {
	if slices.Contains(g.Spec.Options, optionReject) || len(g.Spec.Options) == 0 {
		return answer{Option: optionReject, Comment: "declined when asked through an agent protocol"}, true
	}
	return answer{}, false
}

// callState is what a call hands its caller to come back with (MCP's requestState): the Run
// it follows and the Gates it asked about, sealed with the server's key so that it comes back
// as it was given. It grants nothing: every read and decision it leads to is the caller's.
type callState struct {
	Tool      string   `json:"tool"`
	Namespace string   `json:"ns"`
	Run       string   `json:"run"`
	Asked     []string `json:"asked,omitempty"`
}

// maxAsked bounds the Gates one call's state remembers.
const maxAsked = 64

func (s *Server) seal(st callState) string {
	if len(st.Asked) > maxAsked {
		st.Asked = st.Asked[len(st.Asked)-maxAsked:]
	}
	b, _ := json.Marshal(st) // plain data
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + s.mac(body)
}

func (s *Server) open(sealed string) (callState, error) {
	var st callState
	body, sig, ok := strings.Cut(sealed, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac(body))) {
		return st, errors.New("the requestState is not one this server gave: start the call again")
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

func (s *Server) mac(body string) string {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("call-state\x00" + body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
