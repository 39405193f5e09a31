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

package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a channel's receiver on loopback that answers with the statuses given, in
// turn, and keeps what it got.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got, r.bodies = append(r.got, req), append(r.bodies, body)
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	w.WriteHeader(status)
}

func setup(t *testing.T, statuses []int, allow bool) (*Notifier, *receiver, chan Outcome) {
	t.Helper()
	rec := &receiver{statuses: statuses}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ch := Channel{Name: "ops", URL: srv.URL + "/hook", KeyFile: keyFile}
	if allow {
		ch.AllowHosts = []string{u.Host}
	}
	cfg := &Config{Channels: []Channel{ch}, ConsoleURL: "https://console.example/"}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	done := make(chan Outcome, 10)
	n := New(cfg, nil, func(o Outcome) { done <- o })
	n.backoff = []time.Duration{time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = n.Start(ctx) }()
	return n, rec, done
}

func message() Message {
	return Message{Event: "GateOpened", Namespace: "shop", Run: "release-1", Step: "plan", Gate: "release-1-plan-x",
		GateUID: "uid-1", Question: "Which version?", Asks: "input", Fields: []string{"version"}, At: time.Unix(1700000000, 0)}
}

func TestANotificationIsSignedAndRetriedUntilTaken(t *testing.T) {
	n, rec, done := setup(t, []int{500, 429, 200}, true)
	m := message()
	m.Link = n.Link("shop", "release-1")
	if err := n.Send("ops", m); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.Err != nil || o.Attempts != 3 {
		t.Fatalf("outcome %+v, want taken at the third attempt", o)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, req := range rec.got {
		ts, delivery := req.Header.Get(HeaderTimestamp), req.Header.Get(HeaderDelivery)
		if delivery != "uid-1" || req.Header.Get(HeaderEvent) != "GateOpened" {
			t.Errorf("attempt %d: headers %v", i, req.Header)
		}
		if want := Sign([]byte("s3cret"), ts, delivery, rec.bodies[i]); req.Header.Get(HeaderSignature) != want {
			t.Errorf("attempt %d: signature %q, want %q", i, req.Header.Get(HeaderSignature), want)
		}
	}
	var got Message
	if err := json.Unmarshal(rec.bodies[2], &got); err != nil || got.Link != "https://console.example/#/ns/shop/runs/release-1" ||
		got.Question != "Which version?" {
		t.Fatalf("body %s (%v)", rec.bodies[2], err)
	}
}

func TestARefusalIsNotRetriedAndRetriesAreBounded(t *testing.T) {
	_, rec, done := func() (*Notifier, *receiver, chan Outcome) {
		n, rec, done := setup(t, []int{403}, true)
		if err := n.Send("ops", message()); err != nil {
			t.Fatal(err)
		}
		return n, rec, done
	}()
	if o := <-done; o.Attempts != 1 || o.Err == nil || !strings.Contains(o.Err.Error(), "refused the notification: 403") {
		t.Fatalf("a 403: %+v", o)
	}
	if len(rec.got) != 1 {
		t.Fatalf("%d requests after a 403", len(rec.got))
	}

	n, rec, done := setup(t, []int{503, 503, 503, 503, 503, 503}, true)
	if err := n.Send("ops", message()); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.Attempts != Attempts || o.Err == nil || !strings.Contains(o.Err.Error(), "503") {
		t.Fatalf("always 503: %+v", o)
	}
	if len(rec.got) != Attempts {
		t.Fatalf("%d requests, want %d", len(rec.got), Attempts)
	}
}

func TestTheAddressGuardKeepsAChannelOffPrivateAddressesUnlessAllowed(t *testing.T) {
	n, rec, done := setup(t, nil, false)
	if err := n.Send("ops", message()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.Err == nil || !strings.Contains(o.Err.Error(), "the address guard refuses") || len(rec.got) != 0 {
		t.Fatalf("loopback not allow-listed: %+v, %d requests", o, len(rec.got))
	}
}

func TestSendRefusesAnUnknownChannelAndAFullQueue(t *testing.T) {
	cfg := &Config{Channels: []Channel{{Name: "ops", URL: "https://hooks.example/x", KeyFile: "/nonexistent"}}}
	n := New(cfg, nil, nil) // not started: nothing drains the queue
	if err := n.Send("chat", message()); !errors.Is(err, ErrNoChannel) || !strings.Contains(err.Error(), "[ops]") {
		t.Fatalf("unknown channel: %v", err)
	}
	only := New(&Config{Channels: []Channel{{Name: "ops", URL: "https://hooks.example/x", KeyFile: "/k",
		Namespaces: []string{"payments"}}}}, nil, nil)
	if err := only.Send("ops", message()); !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "[payments]") {
		t.Fatalf("a namespace the channel does not take: %v", err)
	}
	for range QueueSize {
		if err := n.Send("ops", message()); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Send("ops", message()); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a full queue: %v", err)
	}
}

func TestLoadChecksTheChannels(t *testing.T) {
	cases := map[string]string{
		"channels: [{name: Ops, url: 'https://x/y', keyFile: /k}]":                                               "channels[0].name \"Ops\"",
		"channels: [{name: ops, url: 'ftp://x/y', keyFile: /k}]":                                                 "channels[0].url",
		"channels: [{name: ops, url: 'https://u:p@x/y', keyFile: /k}]":                                           "no credentials",
		"channels: [{name: ops, url: 'https://x/y'}]":                                                            "channels[0].keyFile",
		"channels: [{name: ops, url: 'https://x/y', keyFile: /k}, {name: ops, url: 'https://x/z', keyFile: /k}]": "two channels",
		"channels: [{name: ops, url: 'https://x/y', keyFile: /k, secret: x}]":                                    "unknown field",
		"channels: [{name: ops, url: 'https://x/y', keyFile: /k}]\nconsoleURL: 'https://console.example'":        "",
	}
	for text, want := range cases {
		path := filepath.Join(t.TempDir(), "channels.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
