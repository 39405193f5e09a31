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
	"fmt"
	"strings"
	"unicode/utf8"
)

// migration is one version of the schema: a text both stores run, or one text per store where
// they differ. {{blob}} is the type of binary data (BLOB in SQLite, BYTEA in PostgreSQL). Each
// text is run whole, in one transaction.
type migration struct {
	both, sqlite, postgres string
}

// text is the migration's text for a store.
func (m migration) text(d dialect) string {
	t := m.both
	switch {
	case d.name == KindSQLite && m.sqlite != "":
		t = m.sqlite
	case d.name == KindPostgres && m.postgres != "":
		t = m.postgres
	}
	return strings.ReplaceAll(t, "{{blob}}", d.blob)
}

// migrations are the schema's versions, in order; the store records the last one applied in
// schema_version. A released migration is never edited: a change is a new one.
var migrations = []migration{
	// 1: the runs, a row each, their labels, and the indexes the filters use.
	{both: `CREATE TABLE runs (
		uid TEXT PRIMARY KEY,
		namespace_uid TEXT NOT NULL,
		namespace TEXT NOT NULL,
		name TEXT NOT NULL,
		scene TEXT NOT NULL,
		phase TEXT NOT NULL,
		started_by TEXT NOT NULL,
		trigger_name TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		finished_at BIGINT NOT NULL,
		archived_at BIGINT NOT NULL,
		search TEXT NOT NULL,
		size BIGINT NOT NULL,
		body {{blob}} NOT NULL
	);
	CREATE INDEX runs_by_namespace ON runs (namespace_uid, finished_at, uid);
	CREATE INDEX runs_by_scene ON runs (namespace_uid, scene, finished_at);
	CREATE INDEX runs_by_name ON runs (namespace_uid, name, finished_at);
	CREATE TABLE run_labels (
		run_uid TEXT NOT NULL,
		key TEXT NOT NULL,
		value TEXT NOT NULL,
		PRIMARY KEY (run_uid, key)
	);
	CREATE INDEX run_labels_by_value ON run_labels (key, value, run_uid);`},
	// 2: an index per equality filter that also gives a page's order (finished_at, uid), so a
	// filter that matches few of a namespace's Runs reads those, not the whole namespace.
	{both: `DROP INDEX runs_by_scene;
	CREATE INDEX runs_by_scene ON runs (namespace_uid, scene, finished_at, uid);
	CREATE INDEX runs_by_phase ON runs (namespace_uid, phase, finished_at, uid);
	CREATE INDEX runs_by_started_by ON runs (namespace_uid, started_by, finished_at, uid);
	CREATE INDEX runs_by_trigger ON runs (namespace_uid, trigger_name, finished_at, uid);`},
	// 3: an index of the text the text filter searches, by trigrams, so a term is found among
	// every Run without reading them all. SQLite: an FTS5 table with the trigram tokenizer,
	// kept by triggers. PostgreSQL: a GIN index of pg_trgm, when the extension can be created
	// (it is trusted: a database owner may); without it the filter reads the Runs.
	{sqlite: `CREATE VIRTUAL TABLE runs_text USING fts5(search, content='runs', content_rowid='rowid', tokenize='trigram');
	CREATE TRIGGER runs_text_insert AFTER INSERT ON runs BEGIN
		INSERT INTO runs_text (rowid, search) VALUES (new.rowid, new.search);
	END;
	CREATE TRIGGER runs_text_delete AFTER DELETE ON runs BEGIN
		INSERT INTO runs_text (runs_text, rowid, search) VALUES ('delete', old.rowid, old.search);
	END;
	CREATE TRIGGER runs_text_update AFTER UPDATE OF search ON runs BEGIN
		INSERT INTO runs_text (runs_text, rowid, search) VALUES ('delete', old.rowid, old.search);
		INSERT INTO runs_text (rowid, search) VALUES (new.rowid, new.search);
	END;
	INSERT INTO runs_text (runs_text) VALUES ('rebuild');`,
		postgres: `DO $$
	BEGIN
		CREATE EXTENSION IF NOT EXISTS pg_trgm;
		CREATE INDEX runs_search_trigrams ON runs USING gin (search gin_trgm_ops);
	EXCEPTION WHEN OTHERS THEN
		RAISE NOTICE 'the archive searches text without an index: %', SQLERRM;
	END $$;`},
}

// dialect is what differs between the two stores.
type dialect struct {
	name string
	blob string
	// lock serializes migrations between managers sharing the store; "" when one manager
	// is all there is.
	lock string
	// placeholder is the n-th (from 1) parameter's marker.
	placeholder func(n int) string
	// textByIndex is the text filter through the trigram index, for a LIKE pattern;
	// textOnColumn the same on the column, for the lower-cased term itself, which no index
	// serves (so the planner reads each namespace's newest Runs, stopping at the page).
	textByIndex, textOnColumn string
	// textProbe counts the Runs that hold a LIKE pattern, up to a limit, through the index.
	textProbe string
}

var (
	sqliteDialect = dialect{name: KindSQLite, blob: "BLOB", placeholder: func(int) string { return "?" },
		textByIndex:  `runs.rowid IN (SELECT rowid FROM runs_text WHERE runs_text.search LIKE ?)`,
		textOnColumn: `instr(search, ?) > 0`,
		textProbe:    `SELECT COUNT(*) FROM (SELECT rowid FROM runs_text WHERE search LIKE ? LIMIT ?)`}
	postgresDialect = dialect{name: KindPostgres, blob: "BYTEA", lock: "SELECT pg_advisory_xact_lock(7305718214)",
		placeholder:  func(n int) string { return fmt.Sprintf("$%d", n) },
		textByIndex:  `search LIKE ? ESCAPE '\'`,
		textOnColumn: `strpos(search, ?) > 0`,
		textProbe:    `SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE search LIKE ? ESCAPE '\' LIMIT ?) AS hits`}
)

// indexable says whether the trigram index of migration 3 can answer a term: one of three
// characters or more (a trigram's length) and, in SQLite, holding no character LIKE would take
// as a wildcard or an escape (its index takes no ESCAPE).
func (d dialect) indexable(term string) bool {
	return utf8.RuneCountInString(term) >= 3 && (d.name != KindSQLite || !strings.ContainsAny(term, `%_\`))
}

// pattern is the LIKE pattern of textByIndex for a term: the term anywhere, its wildcards and
// escapes taken literally (SQLite's index is given no such term: see indexable).
func (d dialect) pattern(term string) string {
	return "%" + likeEscape(term) + "%"
}

// bind rewrites the ? markers of a query into the dialect's.
func (d dialect) bind(query string) string {
	if d.name == KindSQLite {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString(d.placeholder(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// migrate applies the migrations the store has not applied yet, each in its own transaction,
// and returns the schema's version.
func migrate(ctx context.Context, db *sql.DB, d dialect) (int, error) {
	return migrateTo(ctx, db, d, len(migrations))
}

// migrateTo applies the migrations up to version target (tests go up step by step).
func migrateTo(ctx context.Context, db *sql.DB, d dialect, target int) (int, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return 0, fmt.Errorf("creating schema_version: %w", err)
	}
	for {
		done, version, err := migrateOne(ctx, db, d, target)
		if err != nil || done {
			return version, err
		}
	}
}

// migrateOne applies the next migration below target, if any.
func migrateOne(ctx context.Context, db *sql.DB, d dialect, target int) (done bool, version int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, 0, err
	}
	defer func() { _ = tx.Rollback() }()
	if d.lock != "" {
		if _, err := tx.ExecContext(ctx, d.lock); err != nil {
			return false, 0, fmt.Errorf("locking the schema: %w", err)
		}
	}
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil {
		return false, 0, err
	}
	version = int(v.Int64)
	if version > len(migrations) {
		return false, version, fmt.Errorf("the archive's schema is version %d, newer than this manager's %d: "+
			"upgrade the manager, or point it at another archive", version, len(migrations))
	}
	if version >= target {
		return true, version, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version].text(d)); err != nil {
		return false, version, fmt.Errorf("migration %d: %w", version+1, err)
	}
	if _, err := tx.ExecContext(ctx, d.bind(`INSERT INTO schema_version (version) VALUES (?)`), version+1); err != nil {
		return false, version, err
	}
	return false, version + 1, tx.Commit()
}
