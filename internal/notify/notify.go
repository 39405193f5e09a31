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

// Package notify sends signed notifications, when a Run starts waiting for a person, to the
// channels the cluster's admin defined (a manager's --notification-channels file); a Scene
// names one (spec.notify.channel), never a URL. Each notification is a JSON POST signed as
// webhook Triggers' deliveries are (HMAC-SHA256 over timestamp, delivery id and body), sent
// through http_fetch's address guard, retried with backoff a bounded number of times from a
// bounded queue: at most once per Gate, never blocking a reconcile.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/ergon-dev/ergon/internal/agent"
)

// Channel is a receiver the cluster's admin lets Scenes notify.
type Channel struct {
	// Name is what a Scene's spec.notify.channel says.
	Name string `json:"name"`
	// URL receives each notification as a POST.
	URL string `json:"url"`
	// KeyFile holds the key that signs each notification (read at each send, so a rotated
	// Secret takes effect without a restart).
	KeyFile string `json:"keyFile"`
	// AllowHosts lets the address guard reach these hosts although they are not public (a
	// receiver inside the cluster), as a Scene's allowHosts does for http_fetch.
	AllowHosts []string `json:"allowHosts,omitempty"`
	// Namespaces, when set, are the only namespaces whose Scenes may use the channel.
	Namespaces []string `json:"namespaces,omitempty"`
}

// Config is the file --notification-channels names.
type Config struct {
	Channels []Channel `json:"channels"`
	// ConsoleURL is where the web console is served; a notification links to the Run there.
	ConsoleURL string `json:"consoleURL,omitempty"`
}

// Load reads and checks a channels file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg := &Config{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func (c *Config) check() error {
	seen := map[string]bool{}
	for i, ch := range c.Channels {
		at := fmt.Sprintf("channels[%d]", i)
		if msgs := validation.IsDNS1123Label(ch.Name); len(msgs) > 0 {
			return fmt.Errorf("%s.name %q: %s", at, ch.Name, strings.Join(msgs, "; "))
		}
		if seen[ch.Name] {
			return fmt.Errorf("%s.name %q: two channels have that name", at, ch.Name)
		}
		seen[ch.Name] = true
		u, err := url.Parse(ch.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%s.url %q: an http or https URL with a host and no credentials", at, ch.URL)
		}
		if ch.KeyFile == "" {
			return fmt.Errorf("%s.keyFile: a file holding the key that signs its notifications", at)
		}
	}
	if c.ConsoleURL != "" {
		if u, err := url.Parse(c.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("consoleURL %q: an http or https URL", c.ConsoleURL)
		}
	}
	return nil
}

// Message is what a notification says: a Gate opened, for a decision or an answer.
type Message struct {
	// Event is GateOpened.
	Event     string `json:"event"`
	Namespace string `json:"namespace"`
	Run       string `json:"run"`
	Step      string `json:"step"`
	Gate      string `json:"gate"`
	// GateUID identifies the Gate; it is the delivery id, the same for every retry.
	GateUID string `json:"gateUID"`
	// Question is the Gate's message, cut at 4 KiB.
	Question string `json:"question"`
	// Asks is "input" (fields to answer) or "decision" (options to choose).
	Asks    string   `json:"asks"`
	Fields  []string `json:"fields,omitempty"`
	Options []string `json:"options,omitempty"`
	// Link opens the Run in the console, when the admin gave its URL.
	Link string    `json:"link,omitempty"`
	At   time.Time `json:"at"`
}

// Headers of a notification, as of a webhook Trigger's delivery.
const (
	HeaderTimestamp = "X-Ergon-Timestamp"
	HeaderDelivery  = "X-Ergon-Delivery"
	HeaderSignature = "X-Ergon-Signature"
	HeaderEvent     = "X-Ergon-Event"
)

// Sign is the X-Ergon-Signature of a notification: sha256= and the hex HMAC-SHA256, under
// key, of timestamp + "." + delivery + "." + body.
func Sign(key []byte, timestamp, delivery string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp + "." + delivery + "."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Bounds of the notifier.
const (
	// QueueSize is how many notifications may wait to be sent; more are dropped, and said so.
	QueueSize = 1000
	// Attempts is how often a notification is tried before it is given up.
	Attempts = 5
	// maxQuestion bounds the question a notification carries.
	maxQuestion = 4096
)

// Backoff is the wait before each retry: 1 s, 4 s, 16 s, 64 s.
var Backoff = []time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 64 * time.Second}

// Outcome says how a notification ended, for OnDone.
type Outcome struct {
	Channel  string
	Message  Message
	Attempts int
	// Err is why it was given up; nil when the receiver took it.
	Err error
}

// Notifier sends notifications from a bounded queue; it is a manager Runnable.
type Notifier struct {
	cfg      Config
	clients  map[string]*http.Client
	queue    chan job
	now      func() time.Time
	backoff  []time.Duration
	onDone   func(Outcome)
	inflight sync.WaitGroup
}

type job struct {
	channel string
	msg     Message
	// attempt is how many times it was tried.
	attempt int
}

// New makes a notifier of cfg's channels; resolver is the address guard's (nil for the
// system's). onDone hears how each notification ended (sent, given up or dropped).
func New(cfg *Config, resolver agent.Resolver, onDone func(Outcome)) *Notifier {
	n := &Notifier{cfg: *cfg, clients: map[string]*http.Client{}, queue: make(chan job, QueueSize),
		now: time.Now, backoff: Backoff, onDone: onDone}
	for _, ch := range cfg.Channels {
		c := agent.NewHTTPClient(resolver, ch.AllowHosts)
		c.Timeout = 20 * time.Second
		n.clients[ch.Name] = c
	}
	return n
}

// Names lists the channels.
func (n *Notifier) Names() []string {
	names := make([]string, 0, len(n.cfg.Channels))
	for _, ch := range n.cfg.Channels {
		names = append(names, ch.Name)
	}
	slices.Sort(names)
	return names
}

// Link is the console's address of a Run, or "".
func (n *Notifier) Link(namespace, run string) string {
	if n.cfg.ConsoleURL == "" {
		return ""
	}
	return strings.TrimSuffix(n.cfg.ConsoleURL, "/") + "/#/ns/" + url.PathEscape(namespace) + "/runs/" + url.PathEscape(run)
}

// ErrNoChannel, ErrNotAllowed and ErrQueueFull are why Send refuses a notification.
var (
	ErrNoChannel  = errors.New("no such notification channel")
	ErrNotAllowed = errors.New("the Scene's namespace may not use this channel")
	ErrQueueFull  = fmt.Errorf("the notification queue is full (%d waiting)", QueueSize)
)

// Send queues a notification to a channel; it never blocks.
func (n *Notifier) Send(channel string, m Message) error {
	if _, ok := n.clients[channel]; !ok {
		return fmt.Errorf("%w %q; the cluster's: %v", ErrNoChannel, channel, n.Names())
	}
	if ns := n.channel(channel).Namespaces; len(ns) > 0 && !slices.Contains(ns, m.Namespace) {
		return fmt.Errorf("%w: channel %q takes notifications from namespaces %v only", ErrNotAllowed, channel, ns)
	}
	if len(m.Question) > maxQuestion {
		m.Question = strings.ToValidUTF8(m.Question[:maxQuestion], "") + " […]"
	}
	select {
	case n.queue <- job{channel: channel, msg: m}:
		return nil
	default:
		return ErrQueueFull
	}
}

// workers send side by side, and a retry waits on a timer, not in a worker: a receiver that
// does not answer holds up the others for one request's timeout at most.
const workers = 4

// Start sends until ctx ends.
func (n *Notifier) Start(ctx context.Context) error {
	for range workers {
		n.inflight.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-n.queue:
					n.deliver(ctx, j)
				}
			}
		})
	}
	<-ctx.Done()
	n.inflight.Wait()
	return nil
}

// deliver tries a notification once. Taken (2xx) or refused for good (a 4xx other than 408
// and 429), it is done; else it is tried again after its backoff, until Attempts ran out.
func (n *Notifier) deliver(ctx context.Context, j job) {
	body, _ := json.Marshal(j.msg) // plain data
	j.attempt++
	retry, err := n.post(ctx, j, body)
	if err == nil || !retry || j.attempt >= Attempts {
		n.done(j, err)
		return
	}
	time.AfterFunc(n.backoff[min(j.attempt-1, len(n.backoff)-1)], func() {
		if ctx.Err() != nil {
			return
		}
		select {
		case n.queue <- j:
		default:
			n.done(j, fmt.Errorf("%w, after attempt %d: %v", ErrQueueFull, j.attempt, err))
		}
	})
}

func (n *Notifier) done(j job, err error) {
	if n.onDone != nil {
		n.onDone(Outcome{Channel: j.channel, Message: j.msg, Attempts: j.attempt, Err: err})
	}
}

func (n *Notifier) post(ctx context.Context, j job, body []byte) (retry bool, err error) {
	ch := n.channel(j.channel)
	key, err := os.ReadFile(ch.KeyFile)
	if err != nil || len(bytes.TrimSpace(key)) == 0 {
		return false, fmt.Errorf("the key of channel %s cannot be read from %s", ch.Name, ch.KeyFile)
	}
	key = bytes.TrimSpace(key)
	ts := strconv.FormatInt(n.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderDelivery, j.msg.GateUID)
	req.Header.Set(HeaderEvent, j.msg.Event)
	req.Header.Set(HeaderSignature, Sign(key, ts, j.msg.GateUID, body))
	resp, err := n.clients[ch.Name].Do(req)
	if err != nil {
		return true, fmt.Errorf("sending to channel %s: %w", ch.Name, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("channel %s answered %s", ch.Name, resp.Status)
	}
	return false, fmt.Errorf("channel %s refused the notification: %s", ch.Name, resp.Status)
}

func (n *Notifier) channel(name string) Channel {
	for _, ch := range n.cfg.Channels {
		if ch.Name == name {
			return ch
		}
	}
	return Channel{}
}

// NeedLeaderElection says the notifier runs on every replica: notifications go out from
// wherever the Run controller made the Gate (every shard's leader).
func (n *Notifier) NeedLeaderElection() bool { return false }
