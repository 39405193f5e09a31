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

// Package memory is the store behind a Scene's spec.memory: the entries an agent step reads
// as context and the writes it proposes with the remember tool, which the Run controller
// applies when the step succeeds. The store is a JSON document, capped in bytes, that evicts
// its oldest entries first. Applying the writes of one step twice changes nothing.
package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Version is the version of the Store document.
const Version = 1

// Limits of one write, as the remember tool's schema enforces them.
const (
	MaxTextBytes = 2048
	MaxKeyBytes  = 64
)

// Store is what a memory holds.
type Store struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Entry is one remembered text, oldest first in a Store.
type Entry struct {
	// Key, when set, names the entry: a later write under the same key replaces it.
	Key  string `json:"key,omitempty"`
	Text string `json:"text"`
	// Source identifies the step that wrote it (a hash: no names, no people), so that the
	// same step's writes are not applied twice.
	Source string    `json:"source"`
	At     time.Time `json:"at"`
}

// Write is a write an agent step proposes.
type Write struct {
	Key  string `json:"key,omitempty"`
	Text string `json:"text"`
}

// Result says what Apply did.
type Result struct {
	// Applied is false when the writes of this source were applied before.
	Applied bool
	// Added counts the writes kept, Replaced those that replaced an entry of the same key,
	// Evicted the entries removed to stay under the cap, Redacted the writes that had a
	// secret-like value removed.
	Added, Replaced, Evicted, Redacted int
}

// Read reads a store; empty input is an empty store.
func Read(b []byte) (Store, error) {
	s := Store{Version: Version}
	if len(b) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Store{}, fmt.Errorf("the memory is not valid JSON: %w", err)
	}
	if s.Version != Version {
		return Store{}, fmt.Errorf("the memory has version %d, this version of Ergon reads %d", s.Version, Version)
	}
	return s, nil
}

// Marshal writes a store as compact JSON.
func (s Store) Marshal() []byte {
	b, _ := json.Marshal(s) // plain data
	return b
}

// Size is the size of the store's document in bytes.
func (s Store) Size() int { return len(s.Marshal()) }

// Apply adds the writes of one source to the store, at now, and keeps the store's document
// within maxBytes by evicting the oldest entries. It returns the new store; s is unchanged.
// Secret-like values are redacted from each write (Redact), empty writes are dropped, texts
// and keys are cut to their limits. A source whose entries the store holds already was
// applied before, and nothing changes.
func Apply(s Store, writes []Write, source string, now time.Time, maxBytes int) (Store, Result) {
	var res Result
	for _, e := range s.Entries {
		if e.Source == source {
			return s, res
		}
	}
	res.Applied = true
	out := Store{Version: Version, Entries: append([]Entry(nil), s.Entries...)}
	for _, w := range writes {
		key, text := Redact(strings.TrimSpace(w.Key)), Redact(strings.TrimSpace(w.Text))
		if key != strings.TrimSpace(w.Key) || text != strings.TrimSpace(w.Text) {
			res.Redacted++
		}
		key, text = cut(key, MaxKeyBytes), cut(text, MaxTextBytes)
		if text == "" {
			continue
		}
		if key != "" {
			before := len(out.Entries)
			out.Entries = deleteKey(out.Entries, key)
			res.Replaced += before - len(out.Entries)
		}
		out.Entries = append(out.Entries, Entry{Key: key, Text: text, Source: source, At: now.UTC().Truncate(time.Second)})
		res.Added++
	}
	for len(out.Entries) > 0 && out.Size() > maxBytes {
		out.Entries = out.Entries[1:]
		res.Evicted++
	}
	return out, res
}

func deleteKey(entries []Entry, key string) []Entry {
	kept := entries[:0]
	for _, e := range entries {
		if e.Key != key {
			kept = append(kept, e)
		}
	}
	return kept
}

// cut shortens s to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Render writes the entries for the model to read, one per line, oldest first: "- KEY: TEXT"
// or "- TEXT"; lines of a text after its first are indented.
func Render(entries []Entry) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("- ")
		if e.Key != "" {
			b.WriteString(e.Key + ": ")
		}
		b.WriteString(strings.ReplaceAll(e.Text, "\n", "\n  "))
	}
	return b.String()
}

// FromTranscript reads the memory writes an agent transcript proposes; none when it proposes
// none or is not a transcript.
func FromTranscript(transcript string) []Write {
	var t struct {
		Memory []Write `json:"memory"`
	}
	if json.Unmarshal([]byte(transcript), &t) != nil {
		return nil
	}
	return t.Memory
}
