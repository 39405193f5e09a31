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

// Package archive keeps the Runs that ended, after Kubernetes deletes them: one repository
// (Store) over one SQL schema, in SQLite (embedded, one manager) or PostgreSQL (shared, any
// number of managers), chosen by the URL the manager is given (docs/archive.md).
//
// A record is keyed by the Run's UID, so writing one again (at-least-once delivery) replaces
// it; and it is found by its namespace's UID, so a namespace deleted and created again under
// the same name sees none of the old one's Runs. Every read is scoped to the namespaces its
// caller may read Runs in, in the query itself.
package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Record is one ended Run as the archive keeps it: the Run object as it ended (metadata,
// spec, status), the snapshot it ran, the whole value of every output and transcript the
// status refers to, its Gates with their decisions and answers, and the end of each step
// log still readable. Secrets are in none of them: a Run holds references only.
type Record struct {
	// NamespaceUID is the UID of the Run's namespace when it was archived.
	NamespaceUID string `json:"namespaceUID"`
	// Run is the Run as it ended, without its managed fields.
	Run ergonv1alpha1.Run `json:"run"`
	// Snapshot is the Scene the Run ran.
	Snapshot *ergonv1alpha1.SceneSpec `json:"snapshot,omitempty"`
	// Values are the whole outputs and transcripts the status refers to, by ValueKey.
	Values map[string]string `json:"values,omitempty"`
	// Gates are the Run's Gates, with their decisions, votes and answers.
	Gates []ergonv1alpha1.Gate `json:"gates,omitempty"`
	// Logs are the ends of the step pods' logs that were still readable, by pod name.
	Logs map[string]string `json:"logs,omitempty"`
	// Missing says what could not be kept, and why: a record is written even so.
	Missing []string `json:"missing,omitempty"`
	// ArchivedAt is when the record was written; set by Put.
	ArchivedAt time.Time `json:"archivedAt"`
}

// FindIn reads the newest record of a Run by the name of its namespace, which must exist: the
// records are found by the namespace's UID, so one of the same name made again sees none of
// the old one's.
func FindIn(ctx context.Context, reader client.Reader, s Store, namespace, name string) (*Record, error) {
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, err
	}
	return s.Find(ctx, string(ns.UID), name)
}

// Original is the archived Run as a retry reads it: its snapshot, which the record keeps
// beside it, in its status.
func (r *Record) Original() *ergonv1alpha1.Run {
	run := r.Run.DeepCopy()
	if run.Status.SceneSnapshot == nil && run.Status.SceneSnapshotRef == nil {
		run.Status.SceneSnapshot = r.Snapshot
	}
	return run
}

// ValueKey names a value of a step in Record.Values: "STEP" for its output, "STEP/transcript"
// for its transcript, "STEP/NAME" for a named output.
func ValueKey(step, what string) string {
	if what == "" {
		return step
	}
	return step + "/" + what
}

// Summary is what a list of archived Runs shows of each: the columns its filters use.
type Summary struct {
	UID          string            `json:"uid"`
	Namespace    string            `json:"namespace"`
	NamespaceUID string            `json:"namespaceUID"`
	Name         string            `json:"name"`
	Scene        string            `json:"scene"`
	Phase        string            `json:"phase"`
	StartedBy    string            `json:"startedBy,omitempty"`
	Trigger      string            `json:"trigger,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	CreatedAt    time.Time         `json:"createdAt"`
	FinishedAt   time.Time         `json:"finishedAt"`
	ArchivedAt   time.Time         `json:"archivedAt"`
}

// Query selects archived Runs. Namespaces is required: the UIDs of the namespaces the
// caller may read Runs in; a query without any finds nothing.
type Query struct {
	Namespaces []string
	Scene      string
	Phase      string
	StartedBy  string
	Trigger    string
	// Labels must all match, exactly.
	Labels map[string]string
	// Since and Until bound when the Run finished: Since <= finishedAt < Until.
	Since, Until time.Time
	// Text is found, case-insensitively, in the Run's name, params, outputs' values or error
	// messages.
	Text string
	// Limit is the page size: DefaultLimit when zero, at most MaxLimit.
	Limit int
	// After is the Continue of the page before.
	After string
}

// Page is one page of a query, newest first.
type Page struct {
	Items []Summary `json:"items"`
	// Continue is given as Query.After for the next page; empty on the last.
	Continue string `json:"continue,omitempty"`
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// ErrNotFound is returned for a Run the archive does not hold, or holds in a namespace the
// caller may not read: the two are not told apart.
var ErrNotFound = errors.New("no such archived Run")

// Store is the archive's repository.
type Store interface {
	// Put writes a record, replacing one of the same Run UID.
	Put(ctx context.Context, rec *Record) error
	// Has reports whether a Run UID is archived.
	Has(ctx context.Context, uid string) (bool, error)
	// Get reads a record of one of namespaces (UIDs) by the Run's UID.
	Get(ctx context.Context, namespaces []string, uid string) (*Record, error)
	// Find reads the newest record of a Run by namespace UID and name.
	Find(ctx context.Context, namespaceUID, name string) (*Record, error)
	// List reads a page of summaries.
	List(ctx context.Context, q Query) (Page, error)
	// Prune deletes, in one namespace (UID), the records that finished before olderThan
	// (when not zero) and those beyond the newest keep (when keep >= 0), and returns how
	// many it deleted.
	Prune(ctx context.Context, namespaceUID string, olderThan time.Time, keep int) (int, error)
	// Stats counts the records and their stored bytes.
	Stats(ctx context.Context) (Stats, error)
	// Namespaces returns the UIDs of the namespaces that have records.
	Namespaces(ctx context.Context) ([]string, error)
	// Kind is KindSQLite or KindPostgres.
	Kind() string
	Close() error
}

// Stats is the archive's size.
type Stats struct {
	Runs  int64
	Bytes int64
}

// Open opens the store a URL names, and brings its schema up to date:
//
//	sqlite:///var/lib/ergon/archive.db   SQLite in a file (one manager only)
//	sqlite::memory:                      SQLite in memory (tests)
//	postgres://user@host:5432/db?...     PostgreSQL (postgresql:// too)
func Open(ctx context.Context, url string) (Store, error) {
	switch Kind(url) {
	case KindSQLite:
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"))
	case KindPostgres:
		return openPostgres(ctx, url)
	}
	return nil, fmt.Errorf("archive URL %q: want sqlite:PATH or postgres://", redactURL(url))
}

// The kinds of store.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// Kind names the store a URL opens: KindSQLite, KindPostgres, or "" for none.
func Kind(url string) string {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return KindSQLite
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return KindPostgres
	}
	return ""
}

// redactURL drops a URL's password, so an error never shows it.
func redactURL(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return url
	}
	user, _, _ := strings.Cut(userinfo, ":")
	return scheme + "://" + user + ":***@" + host
}

// Lazy is a Store that opens the store url names on first use, and again after an open
// that failed: a manager starts while its archive is down, and archives once it is back.
func Lazy(url string) Store {
	return &lazy{url: url, kind: Kind(url)}
}

type lazy struct {
	url, kind string
	mu        sync.Mutex
	store     Store
}

func (l *lazy) get(ctx context.Context) (Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store != nil {
		return l.store, nil
	}
	s, err := Open(ctx, l.url)
	if err != nil {
		return nil, fmt.Errorf("the archive is not reachable: %w", err)
	}
	l.store = s
	return s, nil
}

func (l *lazy) Put(ctx context.Context, rec *Record) error {
	s, err := l.get(ctx)
	if err != nil {
		return err
	}
	return s.Put(ctx, rec)
}

func (l *lazy) Has(ctx context.Context, uid string) (bool, error) {
	s, err := l.get(ctx)
	if err != nil {
		return false, err
	}
	return s.Has(ctx, uid)
}

func (l *lazy) Get(ctx context.Context, namespaces []string, uid string) (*Record, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, namespaces, uid)
}

func (l *lazy) Find(ctx context.Context, namespaceUID, name string) (*Record, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.Find(ctx, namespaceUID, name)
}

func (l *lazy) List(ctx context.Context, q Query) (Page, error) {
	s, err := l.get(ctx)
	if err != nil {
		return Page{}, err
	}
	return s.List(ctx, q)
}

func (l *lazy) Prune(ctx context.Context, namespaceUID string, olderThan time.Time, keep int) (int, error) {
	s, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return s.Prune(ctx, namespaceUID, olderThan, keep)
}

func (l *lazy) Stats(ctx context.Context) (Stats, error) {
	s, err := l.get(ctx)
	if err != nil {
		return Stats{}, err
	}
	return s.Stats(ctx)
}

func (l *lazy) Namespaces(ctx context.Context) ([]string, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.Namespaces(ctx)
}

func (l *lazy) Kind() string { return l.kind }

func (l *lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	return l.store.Close()
}
