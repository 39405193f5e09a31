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
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestBlockedAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"::1", true},
		{"169.254.169.254", true},
		{"fd00:ec2::254", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"100.64.0.1", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"fe80::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"64:ff9b::a9fe:a9fe", true},  // NAT64 of 169.254.169.254
		{"2002:7f00:1::", true},       // 6to4 of 127.0.0.1
		{"64:ff9b:1::a00:1", true},    // local-use NAT64
		{"2001:0:4136:e378::1", true}, // Teredo
		{"::ffff:0:a00:1", true},      // IPv4-translated 10.0.0.1
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"2606:4700:4700::1111", false},
		{"::ffff:8.8.8.8", false},
	} {
		got := BlockedAddr(netip.MustParseAddr(tc.addr)) != ""
		if got != tc.blocked {
			t.Errorf("BlockedAddr(%s) blocked = %v, want %v", tc.addr, got, tc.blocked)
		}
	}
}

func TestLegacyIPv4FormsAreParsed(t *testing.T) {
	for host, want := range map[string]string{
		"2130706433":      "127.0.0.1",
		"0x7f.1":          "127.0.0.1",
		"0177.0.0.1":      "127.0.0.1",
		"0x7f000001":      "127.0.0.1",
		"127.1":           "127.0.0.1",
		"[::ffff:7f00:1]": "::ffff:127.0.0.1",
		"[::1]":           "::1",
	} {
		a, ok := parseHostIP(host)
		if !ok || a.String() != want {
			t.Errorf("parseHostIP(%q) = %v, %v; want %s", host, a, ok, want)
		}
	}
	for _, host := range []string{"example.com", "1.2.3.4.5", "256.1.1.1", "0x.1", "llm.ns.svc"} {
		if a, ok := parseHostIP(host); ok {
			t.Errorf("parseHostIP(%q) = %v; want not an address", host, a)
		}
	}
}

// The guard refuses before any connection is made: none of these addresses needs to listen.
func TestHTTPFetchRefusesPrivateDestinations(t *testing.T) {
	resolver := staticResolver{
		"rebind.example":   {netip.MustParseAddr("10.0.0.7")},
		"mixed.example":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")},
		"metadata.example": {netip.MustParseAddr("fd00:ec2::254")},
		"localhost":        {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	}
	client := NewHTTPClient(resolver, []string{"allowed.svc"})
	env := &ToolEnv{HTTP: client, Timeout: DefaultToolTimeout, MaxResult: DefaultToolResult}
	for _, u := range []string{
		"http://localhost/",
		"http://localhost:8080/",
		"http://[::1]/",
		"http://169.254.169.254/latest/meta-data/",
		"http://2130706433/",
		"http://0x7f.1/",
		"http://[::ffff:127.0.0.1]/",
		"http://[fd00:ec2::254]/",
		"http://100.64.1.1/",
		"http://rebind.example/",
		"http://mixed.example/",
		"http://metadata.example/",
		"http://0.0.0.0:80/",
	} {
		args, _ := json.Marshal(map[string]string{"url": u})
		_, err := registry["http_fetch"].call(context.Background(), env, string(args))
		if err == nil || !strings.Contains(err.Error(), "the address guard refuses") {
			t.Errorf("fetching %s: err = %v; want a refusal", u, err)
		}
	}
}

func TestHTTPFetchChecksRedirects(t *testing.T) {
	// A "public" server (allow-listed by its test name) that redirects to a private address.
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("internal secrets"))
	}))
	defer private.Close()
	pu, _ := url.Parse(private.URL)
	_, port, _ := net.SplitHostPort(pu.Host)
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://internal.example:"+port+"/", http.StatusFound)
	}))
	defer public.Close()
	_, pubPort, _ := net.SplitHostPort(strings.TrimPrefix(public.URL, "http://"))
	resolver := staticResolver{
		"public.example":   {netip.MustParseAddr("127.0.0.1")},
		"internal.example": {netip.MustParseAddr("127.0.0.1")},
	}
	client := NewHTTPClient(resolver, []string{"public.example:" + pubPort})
	env := &ToolEnv{HTTP: client, Timeout: DefaultToolTimeout, MaxResult: DefaultToolResult}
	_, err := registry["http_fetch"].call(context.Background(), env, `{"url":"http://public.example:`+pubPort+`/start"}`)
	if err == nil || !strings.Contains(err.Error(), "the address guard refuses internal.example") {
		t.Fatalf("err = %v; want the redirect to internal.example refused", err)
	}
	// The allow-listed host itself is reachable, which shows the refusal is the redirect's.
	client = NewHTTPClient(resolver, []string{"public.example:" + pubPort, "internal.example"})
	env.HTTP = client
	out, err := registry["http_fetch"].call(context.Background(), env, `{"url":"http://public.example:`+pubPort+`/start"}`)
	if err != nil || !strings.Contains(out, "internal secrets") {
		t.Fatalf("with both allow-listed: %q, %v", out, err)
	}
}

func TestHTTPFetchCapsTheBody(t *testing.T) {
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", HTTPFetchMaxBody+10)))
	}))
	defer big.Close()
	env := &ToolEnv{HTTP: NewHTTPClient(nil, []string{"127.0.0.1"}), Timeout: DefaultToolTimeout, MaxResult: 1 << 20}
	out, err := registry["http_fetch"].call(context.Background(), env, `{"url":"`+big.URL+`"}`)
	if err != nil || !strings.HasSuffix(out, "[truncated: the body is longer than 262144 bytes]") {
		t.Fatalf("%v; tail %q", err, out[max(len(out)-80, 0):])
	}
}
