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

package identity

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestIdentityRoundTripsAndKeysOnEveryAttribute(t *testing.T) {
	alice := FromUserInfo(authenticationv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"b", "a"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"y", "x"}}})
	back, err := Decode(Encode(alice))
	if err != nil {
		t.Fatal(err)
	}
	if Key(back) != Key(alice) {
		t.Fatalf("decoded %v, want %v", back, alice)
	}
	variants := []ergonv1alpha1.UserIdentity{
		{Username: "alice", UID: "u1", Groups: []string{"a", "b"}},
		{Username: "alice", UID: "u2", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x", "y"}}},
		{Username: "alice", UID: "u1", Groups: []string{"a"}, Extra: map[string][]string{"scopes": {"x", "y"}}},
		{Username: "alice", UID: "u1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x"}}},
		{Username: "mallory", UID: "u1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x", "y"}}},
	}
	for _, v := range variants {
		if Key(v) == Key(alice) {
			t.Errorf("%v keys the same as %v", v, alice)
		}
	}
	if Key(ergonv1alpha1.UserIdentity{Username: "alice", UID: "u1", Groups: []string{"a", "b"},
		Extra: map[string][]string{"scopes": {"y", "x"}}}) != Key(alice) {
		t.Error("the order of groups or extra values changed the key")
	}
}

func TestDecodeRefusesWhatIsNoIdentity(t *testing.T) {
	for _, v := range []string{"", "alice", `{"username":""}`, `{"groups":["system:masters"]}`} {
		if _, err := Decode(v); err == nil {
			t.Errorf("Decode(%q) took it for an identity", v)
		}
	}
}

func TestServiceAccountIsWhatItsTokenAuthenticatesAs(t *testing.T) {
	sa := ServiceAccount("team", "flux")
	if sa.Username != "system:serviceaccount:team:flux" {
		t.Errorf("username %q", sa.Username)
	}
	want := map[string]bool{"system:serviceaccounts": true, "system:serviceaccounts:team": true, "system:authenticated": true}
	for _, g := range sa.Groups {
		delete(want, g)
	}
	if len(want) > 0 {
		t.Errorf("groups %v lack %v", sa.Groups, want)
	}
}
