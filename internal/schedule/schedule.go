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

// Package schedule is the cron arithmetic of schedule Triggers, with the semantics of a
// Kubernetes CronJob: which scheduled time is due now, which missed times are given up, when
// the next one comes, and what the concurrency policy does with a Run still active. It has no
// client and no clock of its own: callers pass the time.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxMissed is how many missed times are counted before a schedule is said to have missed
// too many, as a CronJob does; only the most recent is ever started.
const MaxMissed = 100

// Schedule is a parsed cron schedule in a time zone.
type Schedule struct {
	cron     cron.Schedule
	location *time.Location
}

// Parse parses a five-field cron schedule or @-macro in the IANA time zone named by zone, or
// in local when zone is empty.
func Parse(spec, zone string, local *time.Location) (*Schedule, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, errors.New("set the time zone in spec.schedule.timeZone, not in the schedule")
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("not a cron schedule (%w); use five fields such as \"0 9 * * MON\" or a macro such as @daily", err)
	}
	// Runs are named by the minute they are due in, so two times in one minute would be one
	// Run; a schedule finer than a minute cannot be kept.
	if every, ok := s.(cron.ConstantDelaySchedule); ok && every.Delay < time.Minute {
		return nil, fmt.Errorf("schedule %q is more often than once a minute; the shortest is @every 1m", spec)
	}
	location := local
	if zone != "" {
		if location, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", zone, err)
		}
	}
	// A schedule that matches no date (0 0 30 2 *) has no next time: robfig/cron returns the
	// zero time, which would have the controller look for one without end.
	if s.Next(time.Now().In(location)).IsZero() {
		return nil, fmt.Errorf("schedule %q never fires: no date matches it", spec)
	}
	return &Schedule{cron: s, location: location}, nil
}

// Next returns the first scheduled time after t. It is computed on the wall clock of the
// schedule's time zone with robfig/cron, as a CronJob does, and so shares its DST behaviour:
// a wall time that spring-forward skips does not run that day, and one that fall-back
// repeats runs twice, once in each offset.
func (s *Schedule) Next(t time.Time) time.Time {
	return s.cron.Next(t.In(s.location))
}

// Due is what a schedule owes at a moment.
type Due struct {
	// Time is the scheduled time to start a Run for now, the most recent one missed; zero
	// when none is due.
	Time time.Time
	// Missed counts the scheduled times between earliest and now, up to MaxMissed+1; all but
	// the most recent are given up.
	Missed int
	// Next is the first scheduled time after now: when to look again.
	Next time.Time
}

// TooManyMissed says more than MaxMissed times were missed, which deserves a warning: the
// clock jumped, the manager was down long, or the schedule is far more frequent than the
// starting deadline allows for.
func (d Due) TooManyMissed() bool {
	return d.Missed > MaxMissed
}

// DueAt computes what the schedule owes at now. earliest is the last scheduled time a Run was
// started for, or the Trigger's creation when none was; times at or before it are never due
// again. A starting deadline, when given, makes times older than now minus the deadline
// unstartable, and they are not counted as missed either, as in a CronJob.
func (s *Schedule) DueAt(earliest, now time.Time, startingDeadline *time.Duration) Due {
	due := Due{Next: s.Next(now)}
	if startingDeadline != nil {
		// A time exactly at the deadline may still start: look from just before it.
		if limit := now.Add(-*startingDeadline - time.Nanosecond); limit.After(earliest) {
			earliest = limit
		}
	}
	if earliest.After(now) {
		return due
	}
	var mostRecent time.Time
	for t := s.Next(earliest); !t.IsZero() && !t.After(now); t = s.Next(t) {
		mostRecent = t
		due.Missed++
		if due.Missed > MaxMissed {
			// A CronJob stops counting here too; the most recent is the last one before now.
			mostRecent = s.last(t, now)
			break
		}
	}
	// Zero when nothing is due; never past the deadline, since the search started there.
	due.Time = mostRecent
	return due
}

// last returns the last scheduled time at or before now, starting from from, which is one.
// It steps by the distance between two scheduled times to skip most of the way, then walks.
func (s *Schedule) last(from, now time.Time) time.Time {
	second := s.Next(from)
	if second.After(now) {
		return from
	}
	if step := second.Sub(from); step > 0 {
		// Jump to within a few intervals of now; schedules with uneven intervals (month
		// ends, DST) are corrected by the walk.
		if n := now.Sub(from)/step - 2; n > 0 {
			if candidate := s.Next(from.Add(n*step - time.Second)); !candidate.After(now) {
				from = candidate
			}
		}
	}
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		from = t
	}
	return from
}

// Decision is what the concurrency policy does with a due Run.
type Decision string

// Decisions of the concurrency policy.
const (
	// Start the due Run beside any active one.
	Start Decision = "Start"
	// Skip the due Run: one is active and the policy is Forbid. The time stays owed and
	// starts when the active Run ends, if still within the starting deadline.
	Skip Decision = "Skip"
	// ReplaceActive cancels the active Runs, then starts the due one.
	ReplaceActive Decision = "Replace"
)

// Decide applies a concurrency policy (Allow, Forbid or Replace; empty means Allow) to a due
// Run, given how many Runs of the Trigger are active.
func Decide(policy string, active int) Decision {
	if active == 0 {
		return Start
	}
	switch policy {
	case "Forbid":
		return Skip
	case "Replace":
		return ReplaceActive
	default:
		return Start
	}
}
