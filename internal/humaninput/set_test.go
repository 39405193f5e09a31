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

package humaninput

import (
	"strings"
	"testing"
)

func TestSetReadsEachValueAsItsFieldIsTyped(t *testing.T) {
	schema := `{"type": "object", "properties": {
		"title": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
		"ship": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
		"sizes": {"type": "array", "items": {"type": "integer"}},
		"review": {"type": "object", "properties": {"score": {"type": "integer"}, "note": {"type": "string"}}},
		"extra": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}`
	f, errs := Parse([]byte(schema), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		sets []string
		want string // canonical JSON, or the error's text
		err  bool
	}{
		{sets: []string{"title=a=b"}, want: `{"title":"a=b"}`},
		{sets: []string{"title="}, want: `{"title":""}`},
		{sets: []string{"count=12", "ratio=0.5", "ship=true"}, want: `{"count":12,"ratio":0.5,"ship":true}`},
		{sets: []string{"tags=a, b,c"}, want: `{"tags":["a","b","c"]}`},
		{sets: []string{"tags=[\"x,y\"]"}, want: `{"tags":["x,y"]}`},
		{sets: []string{"tags="}, want: `{"tags":[]}`},
		{sets: []string{"sizes=1,2"}, want: `{"sizes":[1,2]}`},
		{sets: []string{"review.score=4", "review.note=fine"}, want: `{"review":{"note":"fine","score":4}}`},
		{sets: []string{"extra={\"a\": false}"}, want: `{"extra":{"a":false}}`},
		{sets: []string{"count=1.5"}, err: true, want: `count: "1.5" is not an integer`},
		{sets: []string{"ratio=NaN"}, err: true, want: `ratio: "NaN" is not a number`},
		{sets: []string{"ship=maybe"}, err: true, want: `ship: "maybe" is not true or false`},
		{sets: []string{"sizes=1,x"}, err: true, want: `sizes: "x" is not an integer`},
		{sets: []string{"nope=1"}, err: true, want: `nope: no field "nope"; the fields here: count, extra, ratio, review, ship, sizes, tags, title`},
		{sets: []string{"review.nope=1"}, err: true, want: `review.nope: no field "nope"; the fields here: note, score`},
		{sets: []string{"title.x=1"}, err: true, want: `title.x: title is a string, not an object of fields`},
		{sets: []string{"title"}, err: true, want: `"title": give a field and its value as name=value`},
		{sets: []string{"extra=[1"}, err: true, want: `extra: "[1" is not a JSON object`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.sets, " "), func(t *testing.T) {
			values := map[string]any{}
			var err error
			for _, s := range c.sets {
				if err = f.Set(values, s); err != nil {
					break
				}
			}
			if c.err {
				if err == nil || !strings.HasPrefix(err.Error(), c.want) {
					t.Fatalf("error %v, want one starting %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(values)
			if err != nil || got != c.want {
				t.Fatalf("got %s (%v), want %s", got, err, c.want)
			}
			if errs := f.Validate(values, nil); len(errs) > 0 {
				t.Fatalf("what Set built does not fit its schema: %v", errs)
			}
		})
	}
}
