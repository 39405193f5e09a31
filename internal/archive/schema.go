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
)

// migrations are the schema's versions, in order; the store records the last one applied in
// schema_version. One text serves both stores: {{blob}} is the type of binary data (BLOB in
// SQLite, BYTEA in PostgreSQL). A released migration is never edited: a change is a new one.
var migrations = []string{
	// 1: the runs, a row each, their labels, and the indexes the filters use.
	`CREATE TABLE runs (
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
	CREATE INDEX run_labels_by_value ON run_labels (key, value, run_uid);`,
	// 2: an index per equality filter that also gives a page's order (finished_at, uid), so a
	// filter that matches few of a namespace's Runs reads those, not the whole namespace.
	`DROP INDEX runs_by_scene;
	CREATE INDEX runs_by_scene ON runs (namespace_uid, scene, finished_at, uid);
	CREATE INDEX runs_by_phase ON runs (namespace_uid, phase, finished_at, uid);
	CREATE INDEX runs_by_started_by ON runs (namespace_uid, started_by, finished_at, uid);
	CREATE INDEX runs_by_trigger ON runs (namespace_uid, trigger_name, finished_at, uid);`,
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
}

var (
	sqliteDialect   = dialect{name: KindSQLite, blob: "BLOB", placeholder: func(int) string { return "?" }}
	postgresDialect = dialect{name: KindPostgres, blob: "BYTEA", lock: "SELECT pg_advisory_xact_lock(7305718214)",
		placeholder: func(n int) string { return fmt.Sprintf("$%d", n) }}
)

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
	text := strings.ReplaceAll(migrations[version], "{{blob}}", d.blob)
	for stmt := range strings.SplitSeq(text, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, version, fmt.Errorf("migration %d: %w", version+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, d.bind(`INSERT INTO schema_version (version) VALUES (?)`), version+1); err != nil {
		return false, version, err
	}
	return false, version + 1, tx.Commit()
}
