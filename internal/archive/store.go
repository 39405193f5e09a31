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
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver, pure Go

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// maxSearch is how much of a Run's text the text filter looks in.
const maxSearch = 64 << 10

// sqlStore is the Store over database/sql, for both dialects.
type sqlStore struct {
	db *sql.DB
	d  dialect
	// now is the clock of archived_at.
	now func() time.Time
	// textIndex says the store has the trigram index of the text it searches.
	textIndex bool
}

func openSQLite(ctx context.Context, path string) (Store, error) {
	memory := path == ":memory:"
	if !memory {
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, errors.New("archive URL sqlite: names no file: want sqlite:///PATH")
		}
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
	if !memory {
		dsn += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if memory {
		db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	} else {
		db.SetMaxOpenConns(4)
	}
	return open(ctx, db, sqliteDialect)
}

func openPostgres(ctx context.Context, url string) (Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", redactURL(url), err)
	}
	db.SetMaxOpenConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return open(ctx, db, postgresDialect)
}

func open(ctx context.Context, db *sql.DB, d dialect) (Store, error) {
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("reaching the %s archive: %w", d.name, err)
	}
	if _, err := migrate(ctx, db, d); err != nil {
		_ = db.Close()
		return nil, err
	}
	st := &sqlStore{db: db, d: d, now: time.Now, textIndex: true}
	if d.name == KindPostgres {
		// Migration 3 makes the index only where pg_trgm could be created.
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'runs' AND indexdef LIKE '%gin_trgm_ops%'`).Scan(&n); err != nil {
			_ = db.Close()
			return nil, err
		}
		st.textIndex = n > 0
	}
	return st, nil
}

func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) Kind() string { return s.d.name }

// row is a record's columns.
type row struct {
	Summary
	search string
	body   []byte
}

func summarize(rec *Record) (row, error) {
	run := &rec.Run
	r := row{Summary: Summary{UID: string(run.UID), Namespace: run.Namespace, NamespaceUID: rec.NamespaceUID,
		Name: run.Name, Scene: run.Spec.SceneRef.Name, Phase: string(run.Status.Phase),
		StartedBy: run.Annotations[ergonv1alpha1.AnnotationCreatedBy], Trigger: run.Labels[ergonv1alpha1.LabelTrigger],
		Labels: run.Labels, CreatedAt: run.CreationTimestamp.Time, ArchivedAt: rec.ArchivedAt}}
	if r.UID == "" || r.NamespaceUID == "" {
		return r, errors.New("an archive record needs the Run's UID and its namespace's UID")
	}
	r.FinishedAt = rec.ArchivedAt
	if run.Status.FinishedAt != nil {
		r.FinishedAt = run.Status.FinishedAt.Time
	}
	r.search = searchText(rec)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(rec); err != nil {
		return r, err
	}
	if err := zw.Close(); err != nil {
		return r, err
	}
	r.body = buf.Bytes()
	return r, nil
}

// searchText is the lower-cased text the text filter looks in for a record.
func searchText(rec *Record) string { return SearchText(&rec.Run, rec.Values) }

// SearchText is the lower-cased text a text search looks in: a Run's name, its params, the
// messages of the Run and its steps, and values (its outputs and transcripts, whole or
// previews), cut to 64 KiB. The console matches live Runs by it too.
func SearchText(run *ergonv1alpha1.Run, values map[string]string) string {
	var b strings.Builder
	add := func(s string) {
		if b.Len() < maxSearch && s != "" {
			b.WriteString(strings.ToLower(s))
			b.WriteByte('\n')
		}
	}
	add(run.Name)
	for _, k := range slices.Sorted(maps.Keys(run.Spec.Params)) {
		add(k + "=" + run.Spec.Params[k])
	}
	for _, c := range run.Status.Conditions {
		add(c.Message)
	}
	for _, st := range run.Status.Steps {
		add(st.Message)
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		add(values[k])
	}
	out := b.String()
	if len(out) > maxSearch {
		out = strings.ToValidUTF8(out[:maxSearch], "")
	}
	return out
}

func (s *sqlStore) Put(ctx context.Context, rec *Record) error {
	rec.ArchivedAt = s.now().UTC().Truncate(time.Millisecond)
	rec.Run.ManagedFields = nil
	r, err := summarize(rec)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, s.d.bind(`INSERT INTO runs (uid, namespace_uid, namespace, name, scene, phase, started_by,
		trigger_name, created_at, finished_at, archived_at, search, size, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET namespace_uid = excluded.namespace_uid, namespace = excluded.namespace,
		name = excluded.name, scene = excluded.scene, phase = excluded.phase, started_by = excluded.started_by,
		trigger_name = excluded.trigger_name, created_at = excluded.created_at, finished_at = excluded.finished_at,
		archived_at = excluded.archived_at, search = excluded.search, size = excluded.size, body = excluded.body`),
		r.UID, r.NamespaceUID, r.Namespace, r.Name, r.Scene, r.Phase, r.StartedBy, r.Trigger,
		millis(r.CreatedAt), millis(r.FinishedAt), millis(r.ArchivedAt), r.search, int64(len(r.body)), r.body)
	if err != nil {
		return fmt.Errorf("archiving Run %s/%s: %w", r.Namespace, r.Name, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.bind(`DELETE FROM run_labels WHERE run_uid = ?`), r.UID); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		if _, err := tx.ExecContext(ctx, s.d.bind(`INSERT INTO run_labels (run_uid, key, value) VALUES (?, ?, ?)`),
			r.UID, k, r.Labels[k]); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *sqlStore) Has(ctx context.Context, uid string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.d.bind(`SELECT COUNT(*) FROM runs WHERE uid = ?`), uid).Scan(&n)
	return n > 0, err
}

func (s *sqlStore) Get(ctx context.Context, namespaces []string, uid string) (*Record, error) {
	if len(namespaces) == 0 {
		return nil, ErrNotFound
	}
	args := []any{uid}
	q := `SELECT body FROM runs WHERE uid = ? AND namespace_uid IN (` + marks(len(namespaces)) + `)`
	for _, ns := range namespaces {
		args = append(args, ns)
	}
	return s.readBody(ctx, q, args...)
}

func (s *sqlStore) Find(ctx context.Context, namespaceUID, name string) (*Record, error) {
	return s.readBody(ctx, `SELECT body FROM runs WHERE namespace_uid = ? AND name = ? ORDER BY finished_at DESC LIMIT 1`,
		namespaceUID, name)
}

func (s *sqlStore) readBody(ctx context.Context, q string, args ...any) (*Record, error) {
	var body []byte
	err := s.db.QueryRowContext(ctx, s.d.bind(q), args...).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("an archive record is corrupt: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("an archive record is corrupt: %w", err)
	}
	rec := &Record{}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("an archive record is corrupt: %w", err)
	}
	return rec, nil
}

func (s *sqlStore) List(ctx context.Context, q Query) (Page, error) {
	var page Page
	if len(q.Namespaces) == 0 {
		return page, nil
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	var where []string
	var args []any
	union := true
	eq := func(column, value string) {
		if value != "" {
			where = append(where, column+` = ?`)
			args = append(args, value)
		}
	}
	eq("scene", q.Scene)
	eq("phase", q.Phase)
	eq("started_by", q.StartedBy)
	eq("trigger_name", q.Trigger)
	for _, k := range slices.Sorted(maps.Keys(q.Labels)) {
		// A lookup per Run read, by run_labels' key: the newest first, stopping at the page.
		where = append(where, `EXISTS (SELECT 1 FROM run_labels WHERE run_uid = runs.uid AND key = ? AND value = ?)`)
		args = append(args, k, q.Labels[k])
	}
	if !q.Since.IsZero() {
		where = append(where, `finished_at >= ?`)
		args = append(args, millis(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, `finished_at < ?`)
		args = append(args, millis(q.Until))
	}
	if q.Text != "" {
		term := strings.ToLower(q.Text)
		rare, err := s.rare(ctx, term)
		if err != nil {
			return page, err
		}
		if rare {
			// The few Runs that hold it are looked up once, for every namespace at once.
			where, union = append(where, s.d.textByIndex), false
			args = append(args, s.d.pattern(term))
		} else {
			where = append(where, s.d.textOnColumn)
			args = append(args, term)
		}
	}
	if q.After != "" {
		at, uid, err := parseCursor(q.After)
		if err != nil {
			return page, err
		}
		where = append(where, `(finished_at < ? OR (finished_at = ? AND uid < ?))`)
		args = append(args, at, at, uid)
	}
	query, all := listQuery(q.Namespaces, where, args, limit+1, union)
	rows, err := s.db.QueryContext(ctx, s.d.bind(query), all...)
	if err != nil {
		return page, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var it Summary
		var created, finished, archived int64
		if err := rows.Scan(&it.UID, &it.NamespaceUID, &it.Namespace, &it.Name, &it.Scene, &it.Phase, &it.StartedBy,
			&it.Trigger, &created, &finished, &archived); err != nil {
			return page, err
		}
		it.CreatedAt, it.FinishedAt, it.ArchivedAt = fromMillis(created), fromMillis(finished), fromMillis(archived)
		page.Items = append(page.Items, it)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		last := page.Items[limit-1]
		page.Continue = fmt.Sprintf("%d.%s", millis(last.FinishedAt), last.UID)
	}
	return page, s.addLabels(ctx, page.Items)
}

// rareText is how many Runs a term may be in to be looked up in the trigram index. A rarer
// term is looked up, and its Runs sorted; a commoner one is found sooner by reading each
// namespace's newest Runs, of which the page fills at once, than by collecting every Run that
// holds it (docs/performance.md).
var rareText = 2000

// rare says whether a term is in at most rareText Runs, asking the trigram index; false when
// the index cannot answer it, or the store has none.
func (s *sqlStore) rare(ctx context.Context, term string) (bool, error) {
	if !s.textIndex || !s.d.indexable(term) {
		return false, nil
	}
	var n int
	err := s.db.QueryRowContext(ctx, s.d.bind(s.d.textProbe), s.d.pattern(term), rareText+1).Scan(&n)
	return n <= rareText, err
}

// listColumns are the columns of a Summary.
const listColumns = `uid, namespace_uid, namespace, name, scene, phase, started_by, trigger_name, created_at, finished_at, archived_at`

// unionNamespaces is how many namespaces a list reads one by one, each by its own index, newest
// first and limited, before merging them; above it, one scan of them all. Reading them one by
// one spares sorting every Run of every namespace (docs/performance.md).
const unionNamespaces = 64

// listQuery is the query of a page: the newest limit Runs of namespaces that pass where; with
// union, each namespace read on its own and the pages merged.
func listQuery(namespaces, where []string, args []any, limit int, union bool) (string, []any) {
	order := ` ORDER BY finished_at DESC, uid DESC LIMIT ?`
	filter := func(ns string) string {
		return strings.Join(append([]string{ns}, where...), " AND ")
	}
	if !union || len(namespaces) == 1 || len(namespaces) > unionNamespaces {
		all := make([]any, 0, len(namespaces)+len(args)+1)
		for _, ns := range namespaces {
			all = append(all, ns)
		}
		all = append(append(all, args...), limit)
		return `SELECT ` + listColumns + ` FROM runs WHERE ` + filter(`namespace_uid IN (`+marks(len(namespaces))+`)`) + order, all
	}
	parts := make([]string, len(namespaces))
	all := make([]any, 0, len(namespaces)*(len(args)+2)+1)
	for i, ns := range namespaces {
		parts[i] = fmt.Sprintf(`SELECT * FROM (SELECT %s FROM runs WHERE %s%s) AS n%d`, listColumns, filter(`namespace_uid = ?`), order, i)
		all = append(append(append(all, ns), args...), limit)
	}
	return `SELECT ` + listColumns + ` FROM (` + strings.Join(parts, ` UNION ALL `) + `) AS pages` + order, append(all, limit)
}

// addLabels reads the labels of a page's Runs.
func (s *sqlStore) addLabels(ctx context.Context, items []Summary) error {
	if len(items) == 0 {
		return nil
	}
	at := map[string]int{}
	args := make([]any, 0, len(items))
	for i, it := range items {
		at[it.UID] = i
		args = append(args, it.UID)
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(`SELECT run_uid, key, value FROM run_labels WHERE run_uid IN (`+
		marks(len(items))+`)`), args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var uid, k, v string
		if err := rows.Scan(&uid, &k, &v); err != nil {
			return err
		}
		it := &items[at[uid]]
		if it.Labels == nil {
			it.Labels = map[string]string{}
		}
		it.Labels[k] = v
	}
	return rows.Err()
}

func (s *sqlStore) Prune(ctx context.Context, namespaceUID string, olderThan time.Time, keep int) (int, error) {
	var uids []string
	collect := func(q string, args ...any) error {
		rows, err := s.db.QueryContext(ctx, s.d.bind(q), args...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var uid string
			if err := rows.Scan(&uid); err != nil {
				return err
			}
			uids = append(uids, uid)
		}
		return rows.Err()
	}
	if !olderThan.IsZero() {
		if err := collect(`SELECT uid FROM runs WHERE namespace_uid = ? AND finished_at < ?`, namespaceUID, millis(olderThan)); err != nil {
			return 0, err
		}
	}
	if keep >= 0 {
		if err := collect(`SELECT uid FROM runs WHERE namespace_uid = ? ORDER BY finished_at DESC, uid DESC LIMIT ? OFFSET ?`,
			namespaceUID, int64(1)<<62, keep); err != nil {
			return 0, err
		}
	}
	slices.Sort(uids)
	uids = slices.Compact(uids)
	deleted := 0
	for chunk := range slices.Chunk(uids, 500) {
		n, err := s.deleteRuns(ctx, chunk)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

func (s *sqlStore) deleteRuns(ctx context.Context, uids []string) (int, error) {
	args := make([]any, len(uids))
	for i, uid := range uids {
		args[i] = uid
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.d.bind(`DELETE FROM run_labels WHERE run_uid IN (`+marks(len(uids))+`)`), args...); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, s.d.bind(`DELETE FROM runs WHERE uid IN (`+marks(len(uids))+`)`), args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), tx.Commit()
}

func (s *sqlStore) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM runs`).Scan(&st.Runs, &st.Bytes)
	return st, err
}

func (s *sqlStore) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT namespace_uid FROM runs ORDER BY namespace_uid`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var uids []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		uids = append(uids, uid)
	}
	return uids, rows.Err()
}

// marks is n ? markers, comma separated.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func parseCursor(c string) (int64, string, error) {
	at, uid, ok := strings.Cut(c, ".")
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || uid == "" {
		return 0, "", fmt.Errorf("continue %q is not one this archive gave", c)
	}
	return ms, uid, nil
}
