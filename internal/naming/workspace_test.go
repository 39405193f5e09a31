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

package naming

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLegacyWorkspaceName(t *testing.T) {
	tests := []struct {
		user string
		want string
	}{
		// sha256("alice@example.com") starts ff8d9819fc0e12bf.
		{user: "alice@example.com", want: "ergon-ws-ff8d9819fc0e12bf"},
		{user: "system:serviceaccount:team-a:bot"},
		{user: strings.Repeat("x", 253)},
	}
	for _, tt := range tests {
		got := LegacyWorkspaceName(tt.user)
		if tt.want != "" && got != tt.want {
			t.Errorf("LegacyWorkspaceName(%q) = %q, want %q", tt.user, got, tt.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("LegacyWorkspaceName(%q) = %q is not a DNS label: %v", tt.user, got, errs)
		}
		if strings.Contains(got, "alice") || strings.Contains(got, "team-a") {
			t.Errorf("LegacyWorkspaceName(%q) = %q leaks the user", tt.user, got)
		}
		if LegacyWorkspaceName(tt.user) != got {
			t.Errorf("LegacyWorkspaceName(%q) is not stable", tt.user)
		}
	}
	if LegacyWorkspaceName("a") == LegacyWorkspaceName("b") {
		t.Error("two users share a name")
	}
}

func TestWorkspaceObjectNameIsADNSLabelOfTheUIDAlone(t *testing.T) {
	uid := "0b6f0c5e-3c6a-4e2b-9a55-5f9d7f0e8a11"
	got := WorkspaceObjectName(uid)
	if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
		t.Errorf("WorkspaceObjectName(%q) = %q is not a DNS label: %v", uid, got, errs)
	}
	if WorkspaceObjectName(uid) != got {
		t.Error("not stable")
	}
	if WorkspaceObjectName("0b6f0c5e-3c6a-4e2b-9a55-5f9d7f0e8a12") == got {
		t.Error("two Workspaces share a name")
	}
	if got == LegacyWorkspaceName(uid) {
		t.Error("a user named like a UID gets a Workspace's name")
	}
}
