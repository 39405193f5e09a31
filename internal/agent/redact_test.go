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

package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRedactorFindsSecretsInJSONText(t *testing.T) {
	secret := `p"a\ss<word>&`
	args, err := json.Marshal(map[string]string{"token": secret})
	if err != nil {
		t.Fatal(err)
	}
	got := NewRedactor(secret).String(string(args))
	if strings.Contains(got, "a\\\\ss") || strings.Contains(got, "word") {
		t.Fatalf("the JSON-escaped secret is still there: %s", got)
	}
	if !strings.Contains(got, Redacted) {
		t.Fatalf("nothing was redacted: %s", got)
	}
}

// A tool's result is redacted before it is capped: a secret cut in two by the cap would leave
// a part that no redactor recognises.
func TestToolResultsAreRedactedBeforeTheyAreCapped(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	registerTool(&Tool{Name: "test_echo", Description: "echo", Parameters: map[string]any{"type": "object"},
		Call: func(context.Context, *ToolEnv, json.RawMessage) (string, error) {
			return strings.Repeat("x", 90) + secret + strings.Repeat("y", 90), nil
		}})
	t.Cleanup(func() { delete(registry, "test_echo") })
	tool := registry["test_echo"]
	env := &ToolEnv{Timeout: time.Second, MaxResult: 100, Redactor: NewRedactor(secret)}
	out, err := tool.call(context.Background(), env, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sk-live") {
		t.Fatalf("a part of the secret survived the cap: %q", out)
	}
	if !strings.Contains(out, "[truncated") {
		t.Fatalf("the result was not capped: %q", out)
	}
}
