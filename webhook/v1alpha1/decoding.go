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

package v1alpha1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// explainingManager hands the webhook builders a server that wraps each admission webhook in
// explainDecoding and countRefusals.
type explainingManager struct{ ctrl.Manager }

func (m explainingManager) GetWebhookServer() webhook.Server {
	return explainingServer{Server: m.Manager.GetWebhookServer(), scheme: m.GetScheme()}
}

type explainingServer struct {
	webhook.Server
	scheme *runtime.Scheme
}

func (s explainingServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok && wh.Handler != nil {
		wh.Handler = countRefusals{Handler: explainDecoding{Handler: wh.Handler, scheme: s.scheme}}
	}
	s.Server.Register(path, hook)
}

// explainDecoding turns the decoding error controller-runtime answers an object with a field of
// the wrong JSON type with ("json: cannot unmarshal number into Go struct field RunSpec.spec.params
// of type string") into the field's name and what to write instead: an unquoted number in
// params (sprint: 43) is the common case.
type explainDecoding struct {
	admission.Handler
	scheme *runtime.Scheme
}

func (h explainDecoding) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.Handler.Handle(ctx, req)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
		return resp
	}
	obj, err := h.scheme.New(schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind})
	if err != nil {
		return resp
	}
	if msg := wrongType(req.Object.Raw, obj); msg != "" {
		resp.Result = &metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: msg}
	}
	return resp
}

// wrongType says which field of raw does not have the JSON type obj's field has, or "" when
// raw decodes into obj.
func wrongType(raw []byte, obj any) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(json.Unmarshal(raw, obj), &typeErr) || typeErr.Field == "" {
		return ""
	}
	want := typeErr.Type.Kind().String()
	path := typeErr.Field
	// The error names a map, not its key: find the key whose value has the wrong type.
	var doc any
	if json.Unmarshal(raw, &doc) == nil {
		node := doc
		for part := range strings.SplitSeq(path, ".") {
			m, _ := node.(map[string]any)
			node = m[part]
		}
		if m, ok := node.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if jsonKind(m[k]) == typeErr.Value {
					v, _ := json.Marshal(m[k])
					path = fmt.Sprintf("%s[%s]: Invalid value: %s", path, k, v)
					break
				}
			}
		}
	}
	if want == "string" {
		return fmt.Sprintf("%s: must be a string, not %s; quote the value in YAML (for example \"43\", \"true\")", path, article(typeErr.Value))
	}
	return fmt.Sprintf("%s: must be %s, not %s", path, article(want), article(typeErr.Value))
}

// article puts "a" or "an" before a JSON type's name.
func article(kind string) string {
	if strings.IndexAny(kind[:min(1, len(kind))], "aeiou") == 0 {
		return "an " + kind
	}
	return "a " + kind
}

// jsonKind names a decoded JSON value's type as encoding/json's errors do.
func jsonKind(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	}
	return ""
}
