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

package schedule

import (
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustParse(t *testing.T, spec, zone string) *Schedule {
	t.Helper()
	s, err := Parse(spec, zone, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, spec, zone string
		wantErr          bool
	}{
		{"five fields parse", "0 9 * * MON", "", false},
		{"@-macros parse", "@hourly", "Europe/Berlin", false},
		{"@every is not a cron field but robfig accepts it", "@every 1h", "", false},
		{"six fields are refused", "0 0 9 * * MON", "", true},
		{"nonsense is refused", "every monday", "", true},
		{"a time zone inside the schedule is refused", "CRON_TZ=Europe/Berlin 0 9 * * *", "", true},
		{"an unknown zone is refused", "0 9 * * *", "Mars/Olympus", true},
		{"a schedule that matches no date is refused", "0 0 30 2 *", "", true},
		{"@every a minute parses", "@every 1m", "", false},
		{"more often than a minute is refused: Runs are named by their minute", "@every 20s", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.spec, tc.zone, time.UTC)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q, %q) error = %v, want error %v", tc.spec, tc.zone, err, tc.wantErr)
			}
		})
	}
}

// TestDueAtReturnsForEveryParsedSchedule guards the loops of DueAt against a schedule
// without a next time, which once had the controller spin: whatever Parse accepts, DueAt
// returns, even after a long downtime.
func TestDueAtReturnsForEveryParsedSchedule(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, spec := range []string{"* * * * *", "0 0 29 2 *", "@every 1m", "@yearly", "0 0 31 * *"} {
		s, err := Parse(spec, "", time.UTC)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		done := make(chan Due, 1)
		go func() { done <- s.DueAt(now.AddDate(-5, 0, 0), now, nil) }()
		select {
		case due := <-done:
			if due.Next.IsZero() || !due.Next.After(now) {
				t.Errorf("%q: next time %v is not after %v", spec, due.Next, now)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: DueAt did not return", spec)
		}
	}
}

func TestNext(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	newYork := mustLoad(t, "America/New_York")
	for _, tc := range []struct {
		name, spec, zone string
		after            time.Time
		want             []time.Time
	}{
		{
			name: "Monday at nine in Berlin is 07:00 UTC in summer and 08:00 UTC in winter",
			spec: "0 9 * * MON", zone: "Europe/Berlin",
			after: time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC),
			want: []time.Time{
				time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC), // after the switch to CET
				time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC),
			},
		},
		{
			name: "the same schedule without a zone runs in the local zone given to Parse (UTC)",
			spec: "0 9 * * MON", zone: "",
			after: time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2026, 10, 26, 9, 0, 0, 0, time.UTC)},
		},
		{
			name: "a wall time that spring-forward skips does not run that day, as in a CronJob",
			spec: "30 2 * * *", zone: "Europe/Berlin",
			after: time.Date(2026, 3, 28, 12, 0, 0, 0, berlin),
			want: []time.Time{
				time.Date(2026, 3, 30, 2, 30, 0, 0, berlin),
				time.Date(2026, 3, 31, 2, 30, 0, 0, berlin),
			},
		},
		{
			name: "a wall time that fall-back repeats runs in both offsets, as in a CronJob",
			spec: "30 2 * * *", zone: "Europe/Berlin",
			after: time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
			want: []time.Time{
				time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST
				time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), // 02:30 CET
				time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC),
			},
		},
		{
			name: "hourly keeps one hour apart in real time across spring-forward in New York",
			spec: "@hourly", zone: "America/New_York",
			after: time.Date(2026, 3, 8, 0, 30, 0, 0, newYork),
			want: []time.Time{
				time.Date(2026, 3, 8, 1, 0, 0, 0, newYork),
				time.Date(2026, 3, 8, 3, 0, 0, 0, newYork), // 02:00 does not exist
				time.Date(2026, 3, 8, 4, 0, 0, 0, newYork),
			},
		},
		{
			name: "@daily is midnight in the zone",
			spec: "@daily", zone: "America/New_York",
			after: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2026, 6, 2, 4, 0, 0, 0, time.UTC)},
		},
		{
			name: "@weekly is Sunday midnight",
			spec: "@weekly", zone: "",
			after: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), // a Monday
			want:  []time.Time{time.Date(2026, 6, 7, 0, 0, 0, 0, time.UTC)},
		},
		{
			name: "@monthly is the first of the month",
			spec: "@monthly", zone: "",
			after: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		},
		{
			name: "@yearly is New Year",
			spec: "@yearly", zone: "Europe/Berlin",
			after: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2027, 1, 1, 0, 0, 0, 0, berlin)},
		},
		{
			name: "a time exactly on the schedule is not its own next time",
			spec: "*/5 * * * *", zone: "",
			after: time.Date(2026, 6, 1, 12, 5, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2026, 6, 1, 12, 10, 0, 0, time.UTC)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, tc.zone)
			at := tc.after
			for i, want := range tc.want {
				at = s.Next(at)
				if !at.Equal(want) {
					t.Fatalf("time %d after %v = %v (%v), want %v", i+1, tc.after, at, at.UTC(), want.UTC())
				}
			}
		})
	}
}

func TestDueAt(t *testing.T) {
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) // on the hour
	deadline := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name              string
		spec              string
		earliest, now     time.Time
		deadline          *time.Duration
		wantTime          time.Time
		wantMissed        int
		wantTooManyMissed bool
		wantNext          time.Time
	}{
		{
			name: "nothing is due before the first time",
			spec: "@hourly", earliest: base.Add(-30 * time.Minute), now: base.Add(-time.Minute),
			wantNext: base,
		},
		{
			name: "a time is due the moment it comes",
			spec: "@hourly", earliest: base.Add(-30 * time.Minute), now: base,
			wantTime: base, wantMissed: 1, wantNext: base.Add(time.Hour),
		},
		{
			name: "the time already started is not due again",
			spec: "@hourly", earliest: base, now: base.Add(10 * time.Minute),
			wantNext: base.Add(time.Hour),
		},
		{
			name: "after downtime only the most recent missed time is due",
			spec: "@hourly", earliest: base, now: base.Add(5*time.Hour + 10*time.Minute),
			wantTime: base.Add(5 * time.Hour), wantMissed: 5, wantNext: base.Add(6 * time.Hour),
		},
		{
			name: "a missed time within the starting deadline is still due",
			spec: "@hourly", earliest: base.Add(-time.Hour), now: base.Add(4 * time.Minute), deadline: deadline(5 * time.Minute),
			wantTime: base, wantMissed: 1, wantNext: base.Add(time.Hour),
		},
		{
			name: "a missed time past the starting deadline is not due and not counted",
			spec: "@hourly", earliest: base.Add(-time.Hour), now: base.Add(6 * time.Minute), deadline: deadline(5 * time.Minute),
			wantNext: base.Add(time.Hour),
		},
		{
			name: "a deadline of zero allows only a start on the dot",
			spec: "@hourly", earliest: base.Add(-time.Hour), now: base, deadline: deadline(0),
			wantTime: base, wantMissed: 1, wantNext: base.Add(time.Hour),
		},
		{
			name: "a deadline of zero gives up a time one second late",
			spec: "@hourly", earliest: base.Add(-time.Hour), now: base.Add(time.Second), deadline: deadline(0),
			wantNext: base.Add(time.Hour),
		},
		{
			name: "more than 100 missed minutes are too many, and the most recent is still due",
			spec: "* * * * *", earliest: base, now: base.Add(3*time.Hour + 30*time.Second),
			wantTime: base.Add(3 * time.Hour), wantMissed: MaxMissed + 1, wantTooManyMissed: true,
			wantNext: base.Add(3*time.Hour + time.Minute),
		},
		{
			name: "exactly 100 missed times are not too many",
			spec: "* * * * *", earliest: base, now: base.Add(100 * time.Minute),
			wantTime: base.Add(100 * time.Minute), wantMissed: 100, wantNext: base.Add(101 * time.Minute),
		},
		{
			name: "a starting deadline bounds the count, so a long downtime is not too many",
			spec: "* * * * *", earliest: base, now: base.Add(30 * 24 * time.Hour), deadline: deadline(10 * time.Minute),
			wantTime: base.Add(30 * 24 * time.Hour), wantMissed: 11, wantNext: base.Add(30*24*time.Hour + time.Minute),
		},
		{
			name: "a year of missed minutes finds the most recent quickly",
			spec: "*/7 * * * *", earliest: base, now: base.Add(365*24*time.Hour + 3*time.Minute),
			wantTime: time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC), wantMissed: MaxMissed + 1, wantTooManyMissed: true,
			wantNext: time.Date(2027, 6, 1, 12, 7, 0, 0, time.UTC),
		},
		{
			name: "a monthly schedule missed for a year starts the last first-of-month",
			spec: "@monthly", earliest: base, now: time.Date(2027, 6, 15, 0, 0, 0, 0, time.UTC),
			wantTime: time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC), wantMissed: 12,
			wantNext: time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "an earliest time after now, as after a clock step back, owes nothing",
			spec: "@hourly", earliest: base.Add(2 * time.Hour), now: base,
			wantNext: base.Add(time.Hour),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustParse(t, tc.spec, "").DueAt(tc.earliest, tc.now, tc.deadline)
			if !got.Time.Equal(tc.wantTime) {
				t.Errorf("Time = %v, want %v", got.Time, tc.wantTime)
			}
			if got.Missed != tc.wantMissed {
				t.Errorf("Missed = %d, want %d", got.Missed, tc.wantMissed)
			}
			if got.TooManyMissed() != tc.wantTooManyMissed {
				t.Errorf("TooManyMissed = %v, want %v", got.TooManyMissed(), tc.wantTooManyMissed)
			}
			if !got.Next.Equal(tc.wantNext) {
				t.Errorf("Next = %v, want %v", got.Next, tc.wantNext)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		active int
		want   Decision
	}{
		{"with nothing active every policy starts", "Forbid", 0, Start},
		{"Allow starts beside an active Run", "Allow", 1, Start},
		{"an empty policy is Allow", "", 2, Start},
		{"Forbid skips while a Run is active", "Forbid", 1, Skip},
		{"Replace replaces the active Runs", "Replace", 3, ReplaceActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.policy, tc.active); got != tc.want {
				t.Fatalf("Decide(%q, %d) = %s, want %s", tc.policy, tc.active, got, tc.want)
			}
		})
	}
}

func BenchmarkDueAtAfterAYearOfDowntime(b *testing.B) {
	s, err := Parse("* * * * *", "Europe/Berlin", time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	earliest := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := earliest.Add(365 * 24 * time.Hour)
	for b.Loop() {
		s.DueAt(earliest, now, nil)
	}
}
