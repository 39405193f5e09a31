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

package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The repository's tests run against both real stores: SQLite in a file, and a PostgreSQL
// server started from the binaries hack/postgres.sh finds (make test sets the variable).

var (
	postgres *testenv.Postgres
	dbSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	if bin := os.Getenv(testenv.EnvPostgresBin); bin != "" {
		var err error
		if postgres, err = testenv.StartPostgres(bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if postgres != nil {
		postgres.Stop()
	}
	os.Exit(code)
}

// stores runs test against each store, each time a new, empty one.
func stores(t *testing.T, test func(t *testing.T, s Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "archive.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		test(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		if postgres == nil {
			if os.Getenv("ERGON_REQUIRE_POSTGRES") != "" {
				t.Fatalf("%s is not set: make test sets it from hack/postgres.sh", testenv.EnvPostgresBin)
			}
			t.Skipf("%s is not set (make test sets it): no PostgreSQL to test against", testenv.EnvPostgresBin)
		}
		s, err := Open(t.Context(), newDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		test(t, s)
	})
}

// newDatabase creates a database of its own for a test on the PostgreSQL server.
func newDatabase(t testing.TB) string {
	t.Helper()
	db, err := sql.Open("pgx", postgres.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	name := fmt.Sprintf("archive_%d", dbSeq.Add(1))
	if _, err := db.ExecContext(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return postgres.DatabaseURL(name)
}

var base = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// record is an ended Run of Scene scene in namespace ns (by UID), which finished at base
// plus minute minutes.
func record(ns, name, scene string, phase ergonv1alpha1.RunPhase, minute int) *Record {
	finished := metav1.NewTime(base.Add(time.Duration(minute) * time.Minute))
	rec := &Record{NamespaceUID: "uid-" + ns, Values: map[string]string{}}
	rec.Run = ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		UID:               types.UID(fmt.Sprintf("%s-%s-%d", ns, name, minute)),
		CreationTimestamp: metav1.NewTime(finished.Add(-time.Minute)),
		Labels:            map[string]string{"team": "blue"},
		Annotations:       map[string]string{ergonv1alpha1.AnnotationCreatedBy: "alice"}}}
	rec.Run.Spec.SceneRef.Name = scene
	rec.Run.Status.Phase = phase
	rec.Run.Status.FinishedAt = &finished
	return rec
}

func names(p Page) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.Name)
	}
	return out
}

func TestARecordIsReadBackWholeAndWritingItAgainReplacesIt(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		rec := record("team-a", "report-1", "report", ergonv1alpha1.RunSucceeded, 1)
		rec.Run.Spec.Params = map[string]string{"topic": "quarterly"}
		rec.Values[ValueKey("write", "")] = "the whole report, " + strings.Repeat("long ", 10000)
		rec.Values[ValueKey("write", "transcript")] = `{"entries":[]}`
		rec.Logs = map[string]string{"report-1-write-1": "the end of the log\n"}
		rec.Gates = []ergonv1alpha1.Gate{{ObjectMeta: metav1.ObjectMeta{Name: "report-1-approve"}}}
		if err := s.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, []string{"uid-team-a"}, string(rec.Run.UID))
		if err != nil {
			t.Fatal(err)
		}
		if got.Values["write"] != rec.Values["write"] || got.Run.Spec.Params["topic"] != "quarterly" ||
			got.Logs["report-1-write-1"] == "" || len(got.Gates) != 1 || got.ArchivedAt.IsZero() {
			t.Fatalf("read back %+v", got)
		}
		// At-least-once: the same Run again replaces its record.
		rec.Run.Status.Phase = ergonv1alpha1.RunFailed
		rec.Run.Labels = map[string]string{"team": "red"}
		if err := s.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		page, err := s.List(ctx, Query{Namespaces: []string{"uid-team-a"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 || page.Items[0].Phase != "Failed" || page.Items[0].Labels["team"] != "red" {
			t.Fatalf("after a second write: %+v", page.Items)
		}
		if has, err := s.Has(ctx, string(rec.Run.UID)); err != nil || !has {
			t.Fatalf("Has = %v, %v", has, err)
		}
		st, err := s.Stats(ctx)
		if err != nil || st.Runs != 1 || st.Bytes <= 0 || st.Bytes > 20000 {
			t.Fatalf("stats = %+v, %v (the body is compressed)", st, err)
		}
		if uids, err := s.Namespaces(ctx); err != nil || !slices.Equal(uids, []string{"uid-team-a"}) {
			t.Fatalf("namespaces = %q, %v", uids, err)
		}
	})
}

func TestReadsSeeOnlyTheNamespacesTheyAreGiven(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		mine := record("team-a", "mine", "report", ergonv1alpha1.RunSucceeded, 1)
		theirs := record("team-b", "theirs", "report", ergonv1alpha1.RunSucceeded, 2)
		// The same namespace name, deleted and created again: a new UID.
		old := record("team-a", "old", "report", ergonv1alpha1.RunSucceeded, 3)
		old.NamespaceUID = "uid-team-a-before"
		for _, r := range []*Record{mine, theirs, old} {
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Get(ctx, []string{"uid-team-a"}, string(theirs.Run.UID)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another namespace's Run: %v", err)
		}
		if _, err := s.Get(ctx, nil, string(mine.Run.UID)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("no namespaces: %v", err)
		}
		page, err := s.List(ctx, Query{Namespaces: []string{"uid-team-a"}})
		if err != nil || strings.Join(names(page), ",") != "mine" {
			t.Fatalf("team-a sees %v, %v", names(page), err)
		}
		page, err = s.List(ctx, Query{})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("a query without namespaces sees %v, %v", names(page), err)
		}
		if _, err := s.Find(ctx, "uid-team-a", "old"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the namespace of the same name before: %v", err)
		}
	})
}

func TestFiltersAndPagesFindTheRunsAsked(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		var all []*Record
		for i := range 12 {
			phase := ergonv1alpha1.RunSucceeded
			if i%3 == 0 {
				phase = ergonv1alpha1.RunFailed
			}
			scene := "report"
			if i%2 == 0 {
				scene = "review"
			}
			r := record("team-a", fmt.Sprintf("run-%02d", i), scene, phase, i/2) // two at each minute
			if i == 5 {
				r.Run.Annotations[ergonv1alpha1.AnnotationCreatedBy] = "bob"
				r.Run.Labels[ergonv1alpha1.LabelTrigger] = "nightly"
				r.Run.Labels["env"] = "prod"
				r.Values["write"] = "Revenue grew 100%_ in Q3"
			}
			all = append(all, r)
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		ns := []string{"uid-team-a"}
		cases := []struct {
			name string
			q    Query
			want string
		}{
			{"scene", Query{Scene: "report", Limit: 3}, "run-11,run-09,run-07"},
			{"phase", Query{Phase: "Failed"}, "run-09,run-06,run-03,run-00"},
			{"started by", Query{StartedBy: "bob"}, "run-05"},
			{"trigger", Query{Trigger: "nightly"}, "run-05"},
			{"labels", Query{Labels: map[string]string{"env": "prod", "team": "blue"}}, "run-05"},
			{"a label that differs", Query{Labels: map[string]string{"env": "dev"}}, ""},
			{"time range", Query{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)}, "run-07,run-06,run-05,run-04"},
			{"text, any case", Query{Text: "REVENUE"}, "run-05"},
			{"text with wildcards is literal", Query{Text: "100%_"}, "run-05"},
			{"a wildcard alone matches only itself", Query{Text: "%"}, "run-05"},
			{"text in the name", Query{Text: "run-1"}, "run-11,run-10"},
		}
		for _, c := range cases {
			c.q.Namespaces = ns
			page, err := s.List(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := strings.Join(names(page), ","); got != c.want {
				t.Errorf("%s: got %s, want %s", c.name, got, c.want)
			}
		}
		// Pages of 5 through runs two of which end at each minute: none lost, none twice.
		var seen []string
		q := Query{Namespaces: ns, Limit: 5}
		for pages := 0; ; pages++ {
			page, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, names(page)...)
			if page.Continue == "" {
				break
			}
			if pages > 5 {
				t.Fatal("the pages do not end")
			}
			q.After = page.Continue
		}
		if len(seen) != len(all) || seen[0] != "run-11" || seen[len(seen)-1] != "run-00" {
			t.Fatalf("paged through %v", seen)
		}
		if _, err := s.List(ctx, Query{Namespaces: ns, After: "not-a-cursor"}); err == nil {
			t.Fatal("a cursor the archive did not give was taken")
		}
	})
}

func TestPruningDeletesByAgeAndCountInOneNamespace(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		for i := range 10 {
			for _, ns := range []string{"team-a", "team-b"} {
				if err := s.Put(ctx, record(ns, fmt.Sprintf("run-%d", i), "report", ergonv1alpha1.RunSucceeded, i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, err := s.Prune(ctx, "uid-team-a", base.Add(3*time.Minute), -1)
		if err != nil || n != 3 {
			t.Fatalf("pruned by age %d, %v", n, err)
		}
		n, err = s.Prune(ctx, "uid-team-a", time.Time{}, 4)
		if err != nil || n != 3 {
			t.Fatalf("pruned by count %d, %v", n, err)
		}
		page, err := s.List(ctx, Query{Namespaces: []string{"uid-team-a"}})
		if err != nil || strings.Join(names(page), ",") != "run-9,run-8,run-7,run-6" {
			t.Fatalf("team-a keeps %v, %v", names(page), err)
		}
		page, err = s.List(ctx, Query{Namespaces: []string{"uid-team-b"}})
		if err != nil || len(page.Items) != 10 {
			t.Fatalf("team-b keeps %d, %v", len(page.Items), err)
		}
	})
}

func TestTheSchemaMigratesUpFromTheFirstVersionAndRefusesANewerOne(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		st := s.(*sqlStore)
		// Opening an up-to-date store again applies nothing.
		if v, err := migrate(ctx, st.db, st.d); err != nil || v != len(migrations) {
			t.Fatalf("migrate again: %d, %v", v, err)
		}
		var rows int
		if err := st.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&rows); err != nil || rows != len(migrations) {
			t.Fatalf("schema_version has %d rows, %v", rows, err)
		}
		if err := s.Put(ctx, record("team-a", "r", "report", ergonv1alpha1.RunSucceeded, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.db.ExecContext(ctx, st.d.bind(`INSERT INTO schema_version (version) VALUES (?)`), len(migrations)+1); err != nil {
			t.Fatal(err)
		}
		if _, err := migrate(ctx, st.db, st.d); err == nil || !strings.Contains(err.Error(), "newer than this manager's") {
			t.Fatalf("a newer schema: %v", err)
		}
	})
}

func TestAStoreIsBuiltUpOneMigrationAtATime(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	ctx := context.Background()
	early := &sqlStore{db: db, d: sqliteDialect, now: time.Now}
	for v := 1; v <= len(migrations); v++ {
		got, err := migrateTo(ctx, db, sqliteDialect, v)
		if err != nil || got != v {
			t.Fatalf("migrating to %d: %d, %v", v, got, err)
		}
		if v == 2 { // a record archived before the text index (3) existed
			r := record("team-a", "before-the-index", "report", ergonv1alpha1.RunSucceeded, 1)
			r.Values["write"] = "written before the index"
			if err := early.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	page, err := early.List(ctx, Query{Namespaces: []string{"uid-team-a"}, Text: "before the index"})
	if err != nil || strings.Join(names(page), ",") != "before-the-index" {
		t.Fatalf("the text index does not hold a record written before it: %v, %v", names(page), err)
	}
	if _, err := Open(ctx, "sqlite://"+filepath.Join(dir, "a.db")); err != nil {
		t.Fatalf("opening a store migrated step by step: %v", err)
	}
}

func TestAURLSaysWhichStore(t *testing.T) {
	if _, err := Open(context.Background(), "mysql://u:secret@h/db"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("an unknown store: %v", err)
	}
	if _, err := Open(context.Background(), "sqlite:"); err == nil {
		t.Fatal("sqlite: without a file was taken")
	}
	for url, kind := range map[string]string{"sqlite:///a.db": "sqlite", "postgresql://h/db": "postgres", "x://": ""} {
		if got := Kind(url); got != kind {
			t.Errorf("Kind(%s) = %q", url, got)
		}
	}
}

func TestListsAcrossNamespacesMergeThemInOrder(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		// 70 namespaces (above unionNamespaces), three Runs each, their finish times interleaved;
		// every third Run Failed.
		var want, failed []string
		var uids []string
		for n := range 70 {
			ns := fmt.Sprintf("ns-%02d", n)
			uids = append(uids, "uid-"+ns)
			for i := range 3 {
				phase := ergonv1alpha1.RunSucceeded
				if (n+i)%3 == 0 {
					phase = ergonv1alpha1.RunFailed
				}
				r := record(ns, fmt.Sprintf("%s-run-%d", ns, i), "report", phase, i*100+n)
				if err := s.Put(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Newest first: minute i*100+n.
		for i := 2; i >= 0; i-- {
			for n := 69; n >= 0; n-- {
				name := fmt.Sprintf("ns-%02d-run-%d", n, i)
				want = append(want, name)
				if (n+i)%3 == 0 {
					failed = append(failed, name)
				}
			}
		}
		pageAll := func(q Query) []string {
			var seen []string
			for pages := 0; ; pages++ {
				page, err := s.List(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, names(page)...)
				if page.Continue == "" {
					return seen
				}
				if pages > 100 {
					t.Fatal("the pages do not end")
				}
				q.After = page.Continue
			}
		}
		for _, tc := range []struct {
			name       string
			namespaces []string
		}{
			{"a few namespaces, each read by its own index", uids[:5]},
			{"many namespaces, read in one scan", uids},
		} {
			t.Run(tc.name, func(t *testing.T) {
				in := map[string]bool{}
				for _, u := range tc.namespaces {
					in[strings.TrimPrefix(u, "uid-")] = true
				}
				keep := func(all []string) []string {
					var out []string
					for _, n := range all {
						if in[n[:5]] {
							out = append(out, n)
						}
					}
					return out
				}
				if got := pageAll(Query{Namespaces: tc.namespaces, Limit: 7}); !slices.Equal(got, keep(want)) {
					t.Errorf("paged through\n%v\nwant\n%v", got, keep(want))
				}
				if got := pageAll(Query{Namespaces: tc.namespaces, Phase: "Failed", Limit: 4}); !slices.Equal(got, keep(failed)) {
					t.Errorf("Failed, paged through\n%v\nwant\n%v", got, keep(failed))
				}
			})
		}
	})
}

func TestTextIsFoundThroughItsIndexAsItChanges(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		put := func(ns, name, text string) {
			r := record(ns, name, "report", ergonv1alpha1.RunSucceeded, 1)
			r.Values["write"] = text
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		put("team-a", "a", "the quarterly numbers are in")
		put("team-b", "b", "abcxbcd and Ünïcode Straße")
		put("team-c", "c", "nothing to see")
		all := []string{"uid-team-a", "uid-team-b", "uid-team-c"}
		find := func(text string) string {
			page, err := s.List(ctx, Query{Namespaces: all, Text: text})
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			return strings.Join(names(page), ",")
		}
		// The filter is answered by the trigram index: a rare term is looked up in it.
		st := s.(*sqlStore)
		if rare, err := st.rare(ctx, "quarterly"); err != nil || !rare {
			t.Errorf("a rare term is not looked up in the index: %v, %v", rare, err)
		}
		switch st.d.name {
		case KindSQLite:
			var plan strings.Builder
			rows, err := st.db.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT uid FROM runs WHERE `+st.d.textByIndex, "%quarterly%")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan.WriteString(detail + "\n")
			}
			_ = rows.Close()
			if !strings.Contains(plan.String(), "VIRTUAL TABLE INDEX") {
				t.Errorf("the text filter does not use the FTS5 index:\n%s", plan.String())
			}
		case KindPostgres:
			var n int
			if err := st.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'runs_search_trigrams'`).Scan(&n); err != nil || n != 1 {
				t.Errorf("no trigram index on PostgreSQL: %d, %v", n, err)
			}
		}
		for text, want := range map[string]string{
			"QUARTERLY NUMBERS": "a",
			"abcd":              "", // every trigram of it is in b's text, but not together
			"bcd":               "b",
			"ünïcode straße":    "b",
			"ße":                "b", // shorter than a trigram: read, not looked up
			"to see":            "c",
		} {
			if got := find(text); got != want {
				t.Errorf("%q found %q, want %q", text, got, want)
			}
		}
		if got, err := s.List(ctx, Query{Namespaces: all[:1], Text: "nothing"}); err != nil || len(got.Items) != 0 {
			t.Errorf("a namespace not asked for is searched: %v, %v", names(got), err)
		}
		// A record written again is found by its new text only; a pruned one is not found.
		put("team-a", "a", "the annual numbers")
		if got := find("quarterly"); got != "" {
			t.Errorf("the old text of a record written again is found: %q", got)
		}
		if got := find("annual numbers"); got != "a" {
			t.Errorf("the new text is not found: %q", got)
		}
		if _, err := s.Prune(ctx, "uid-team-c", base.Add(time.Hour), 0); err != nil {
			t.Fatal(err)
		}
		if got := find("to see"); got != "" {
			t.Errorf("a pruned record is found: %q", got)
		}
	})
}

// A PostgreSQL that cannot take the trigram index (no pg_trgm, no right to create it, or, here,
// the name taken) still migrates: the text filter then reads the Runs.
func TestPostgresMigratesWithoutTheTrigramIndex(t *testing.T) {
	if postgres == nil {
		t.Skipf("%s is not set: no PostgreSQL to test against", testenv.EnvPostgresBin)
	}
	ctx := t.Context()
	db, err := sql.Open("pgx", newDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := migrateTo(ctx, db, postgresDialect, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE INDEX runs_search_trigrams ON runs (name)`); err != nil {
		t.Fatal(err)
	}
	if v, err := migrate(ctx, db, postgresDialect); err != nil || v != len(migrations) {
		t.Fatalf("migrating without the trigram index: %d, %v", v, err)
	}
	st, err := open(ctx, db, postgresDialect)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*sqlStore)
	if s.textIndex {
		t.Fatal("the store takes the index it could not make for its own")
	}
	r := record("team-a", "a", "report", ergonv1alpha1.RunSucceeded, 1)
	r.Values["write"] = "found by reading"
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, Query{Namespaces: []string{"uid-team-a"}, Text: "by reading"})
	if err != nil || strings.Join(names(page), ",") != "a" {
		t.Fatalf("text without the index: %v, %v", names(page), err)
	}
}

// A term in more Runs than rareText is found by reading the namespaces' newest Runs, with the
// same answer.
func TestACommonTermIsReadFromTheColumn(t *testing.T) {
	defer func(n int) { rareText = n }(rareText)
	rareText = 2
	stores(t, func(t *testing.T, s Store) {
		ctx := t.Context()
		for i := range 3 {
			r := record("team-a", fmt.Sprintf("r%d", i), "report", ergonv1alpha1.RunSucceeded, i)
			r.Values["write"] = "common words"
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if rare, err := s.(*sqlStore).rare(ctx, "common words"); err != nil || rare {
			t.Errorf("a common term is taken for a rare one: %v", err)
		}
		page, err := s.List(ctx, Query{Namespaces: []string{"uid-team-a"}, Text: "COMMON"})
		if err != nil || strings.Join(names(page), ",") != "r2,r1,r0" {
			t.Errorf("a common term found %v, %v", names(page), err)
		}
	})
}
