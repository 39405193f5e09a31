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

package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The console's flags parse although the packages it imports may register flags of their
// own, --kubeconfig among them (controller-runtime's config package does), on the
// process-wide set: a console that defined its flags there panicked at start ("flag
// redefined: kubeconfig") and never served. The test registers the clash itself when no
// import does, so that it does not depend on what the console imports today.
func TestParseFlags(t *testing.T) {
	if flag.CommandLine.Lookup("kubeconfig") == nil {
		flag.CommandLine.String("kubeconfig", "", "as an imported package would register it")
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    options
		wantErr bool
	}{
		{name: "defaults", want: options{addr: "127.0.0.1:8080", namespace: "default", maxStreams: 500, protocols: protocolOptions{
			enabled: true, callWait: 2 * time.Minute, rate: 5, burst: 20}}},
		{name: "every flag", args: []string{"--bind-address=:9443", "--kubeconfig", "/k", "--read-only", "--auth-header=X-Token",
			"--default-namespace=team", "--tls-cert-file=c", "--tls-key-file=k", "--max-streams=7", "--protocols=false", "--key-file=/s",
			"--protocol-namespaces=a, b,", "--protocol-allowed-origins=https://ide.example", "--protocol-resource-url=https://e/mcp",
			"--protocol-authorization-servers=https://issuer", "--protocol-call-wait=30s", "--protocol-rate=1.5", "--protocol-burst=3"},
			want: options{addr: ":9443", kubeconfig: "/k", readOnly: true, proxyHeader: "X-Token", namespace: "team",
				certFile: "c", keyFile: "k", maxStreams: 7, secretFile: "/s", protocols: protocolOptions{namespaces: []string{"a", "b"},
					origins: []string{"https://ide.example"}, resource: "https://e/mcp", authorizationServers: []string{"https://issuer"},
					callWait: 30 * time.Second, rate: 1.5, burst: 3}}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: true},
		{name: "stray argument", args: []string{"serve"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseFlags(%q): error %v, want an error: %t", tc.args, err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseFlags(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}
}

func TestSigningKey(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short"), filepath.Join(dir, "long")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, []byte(strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := signingKey(short); err == nil {
		t.Error("a key of 9 bytes was accepted")
	}
	if key, err := signingKey(long); err != nil || string(key) != strings.Repeat("k", 40) {
		t.Errorf("key %q, %v", key, err)
	}
	a, _ := signingKey("")
	b, _ := signingKey("")
	if len(a) != 32 || string(a) == string(b) {
		t.Error("without a file, each start draws a key of its own")
	}
}
