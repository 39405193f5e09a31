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
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func testServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.APIServer = &rest.Config{Host: "https://127.0.0.1:1"}
	cfg.Key = bytes.Repeat([]byte{1}, 32)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func gate(name string, input string, options ...string) *ergonv1alpha1.Gate {
	g := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec: ergonv1alpha1.GateSpec{Step: "review", Message: "Ship it?", Options: options}}
	if input != "" {
		g.Spec.Input = &apiextensionsv1.JSON{Raw: []byte(input)}
	}
	return g
}

func TestGateForms(t *testing.T) {
	for _, c := range []struct {
		name  string
		gate  *ergonv1alpha1.Gate
		ok    bool
		field string // a property the form asks
	}{
		{name: "an approval Gate asks its options", gate: gate("g", "", "approve", "reject", "later"), ok: true, field: "decision"},
		{name: "an approval Gate without options asks approve or reject", gate: gate("g", ""), ok: true, field: "decision"},
		{name: "a flat input Gate asks its own fields", gate: gate("g",
			`{"type": "object", "properties": {"region": {"type": "string", "enum": ["eu", "us"]}, "count": {"type": "integer"}}}`),
			ok: true, field: "region"},
		{name: "an input Gate with a nested object is no form", gate: gate("g",
			`{"type": "object", "properties": {"where": {"type": "object", "properties": {"x": {"type": "string"}}}}}`)},
		{name: "nor with an array", gate: gate("g",
			`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			form, ok := gateForm(c.gate)
			if ok != c.ok {
				t.Fatalf("form %v, ok %v; want ok %v", form, ok, c.ok)
			}
			if ok {
				if _, has := form["properties"].(map[string]any)[c.field]; !has {
					t.Fatalf("form %v does not ask %s", form, c.field)
				}
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	approval := gate("g", "", "approve", "reject")
	a, err := answerOf(approval, map[string]any{"decision": "approve", "comment": "ok"})
	if err != nil || a.Option != "approve" || a.Comment != "ok" || a.Values != nil {
		t.Fatalf("approval answer %+v, %v", a, err)
	}
	if _, err := answerOf(approval, map[string]any{"comment": "no decision"}); err == nil {
		t.Fatal("an approval without a decision must be refused")
	}
	input := gate("g", `{"type": "object", "properties": {"region": {"type": "string"}}}`)
	a, err = answerOf(input, map[string]any{"region": "eu"})
	if err != nil || a.Values == nil || string(a.Values.Raw) != `{"region":"eu"}` || a.Option != "" {
		t.Fatalf("input answer %+v, %v", a, err)
	}
	if a, ok := declined(approval); !ok || a.Option != "reject" {
		t.Fatalf("declining a Gate with reject: %+v %v", a, ok)
	}
	if _, ok := declined(gate("g", "", "yes", "no")); ok {
		t.Fatal("a Gate without a reject option stays open when declined")
	}
}

func TestCallStateComesBackAsItWasGiven(t *testing.T) {
	s := testServer(t, Config{})
	sealed := s.seal(callState{Tool: "team.report", Namespace: "team", Run: "report-x", Asked: []string{"g1"}})
	st, err := s.open(sealed)
	if err != nil || st.Run != "report-x" || st.Asked[0] != "g1" {
		t.Fatalf("opened %+v, %v", st, err)
	}
	body, sig, _ := strings.Cut(sealed, ".")
	forged := s.seal(callState{Tool: "team.report", Namespace: "team", Run: "someone-elses"})
	forgedBody, _, _ := strings.Cut(forged, ".")
	for _, bad := range []string{forgedBody + "." + sig, body, body + ".x", ""} {
		if _, err := s.open(bad); err == nil {
			t.Errorf("opened a state the server did not give: %q", bad)
		}
	}
	other := testServer(t, Config{})
	other.cfg.Key = bytes.Repeat([]byte{2}, 32)
	if _, err := other.open(sealed); err == nil {
		t.Error("a state sealed under another key opened")
	}
}

func TestRequestsWithoutATokenOrFromAnotherSite(t *testing.T) {
	s := testServer(t, Config{AllowedOrigins: []string{"https://ide.example"}})
	for _, c := range []struct {
		name, auth, origin string
		want               int
	}{
		{name: "no token", want: http.StatusUnauthorized},
		{name: "another scheme", auth: "Basic dXNlcjpwYXNz", want: http.StatusUnauthorized},
		{name: "an empty bearer", auth: "Bearer ", want: http.StatusUnauthorized},
		{name: "a page of another site", auth: "Bearer t", origin: "https://evil.example", want: http.StatusForbidden},
		{name: "a look-alike of an allowed origin", auth: "Bearer t", origin: "https://ide.example.evil", want: http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "https://ergon.example/mcp", nil)
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("answered %d, want %d: %s", w.Code, c.want, w.Body)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "https://ergon.example/mcp", nil)
	r.Header.Set("Origin", "https://ide.example")
	if !s.originAllowed(r) {
		t.Error("an allowed origin is refused")
	}
	r.Header.Set("Origin", "https://ergon.example")
	if !s.originAllowed(r) {
		t.Error("the endpoint's own origin is refused")
	}
}

func TestMetadataIsServedOnlyWhenConfigured(t *testing.T) {
	bare := testServer(t, Config{})
	w := httptest.NewRecorder()
	bare.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, MetadataPath, nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("metadata without an issuer: %d", w.Code)
	}
	s := testServer(t, Config{Resource: "https://ergon.example/mcp", AuthorizationServers: []string{"https://issuer.example"}})
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, MetadataPath, nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "https://issuer.example") {
		t.Fatalf("metadata: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, MCPPath, nil))
	if got := w.Header().Get("WWW-Authenticate"); !strings.Contains(got, `resource_metadata="https://ergon.example`+MetadataPath+`"`) {
		t.Fatalf("WWW-Authenticate %q does not name the metadata", got)
	}
}

func TestA2AMessages(t *testing.T) {
	one := &ergonv1alpha1.Scene{Spec: ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "topic"}}}}
	two := &ergonv1alpha1.Scene{Spec: ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "a"}, {Name: "b"}}}}
	none := &ergonv1alpha1.Scene{}
	text := func(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: s}) }
	data := func(d map[string]any) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: d}) }
	if args, err := argsIn(one, text("sprint 43")); err != nil || args["topic"] != "sprint 43" {
		t.Errorf("one param from text: %v %v", args, err)
	}
	if _, err := argsIn(two, text("which?")); err == nil {
		t.Error("text for a Scene of two params must be refused")
	}
	if args, err := argsIn(two, data(map[string]any{"params": map[string]any{"a": "1", "b": "2"}})); err != nil || args["b"] != "2" {
		t.Errorf("params from data: %v %v", args, err)
	}
	if args, err := argsIn(none, text("hello")); err != nil || args != nil {
		t.Errorf("a Scene without params: %v %v", args, err)
	}

	approval := gate("g1", "", "approve", "reject")
	v := &runView{Decidable: []*ergonv1alpha1.Gate{approval}}
	if name, a, err := answerIn(v, text("Approve, looks good")); err != nil || name != "g1" || a.Option != "approve" {
		t.Errorf("text answer: %s %+v %v", name, a, err)
	}
	two2 := &runView{Decidable: []*ergonv1alpha1.Gate{approval, gate("g2", "", "approve", "reject")}}
	if _, _, err := answerIn(two2, text("approve")); err == nil || !strings.Contains(err.Error(), "g1, g2") {
		t.Errorf("an answer to one of two Gates must name it: %v", err)
	}
	if name, a, err := answerIn(two2, data(map[string]any{"gate": "g2", "decision": "reject"})); err != nil || name != "g2" || a.Option != "reject" {
		t.Errorf("named answer: %s %+v %v", name, a, err)
	}
	if _, _, err := answerIn(&runView{}, text("approve")); err == nil {
		t.Error("an answer when no Gate waits for the caller must be refused")
	}
	if got := contextAnnotation("ctx-1"); got[annotationContext] != "ctx-1" {
		t.Errorf("context kept: %v", got)
	}
	if got := contextAnnotation("bad\nid"); got != nil {
		t.Errorf("a context id with control characters was kept: %v", got)
	}
}
