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

// Package cause bounds call graphs at run time. Every Run has a cause: the root Run that
// started its chain and how many Runs lie between them (its depth). Child Runs of scene steps
// and Scene tools, and Runs a runCompleted Trigger starts when another Run ends, inherit the
// root and are one deeper. The limits here cap the depth, the Runs one root causes in all,
// the child Runs one Run creates, and the Runs one Trigger starts a minute; each refusal says
// which limit, its value and the manager flag and chart value that raise it.
package cause

import (
	"fmt"
	"strconv"
	"strings"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Cause is where a Run sits in the chain of Runs that caused it.
type Cause struct {
	// Root is "NAME/UID" of the Run at the root of the chain.
	Root string
	// Depth is how many Runs lie between the Run and its root: 0 for the root itself.
	Depth int
}

// RootKey is the value of ergonv1alpha1.AnnotationCauseRoot for a Run that is its own root.
func RootKey(run *ergonv1alpha1.Run) string {
	return run.Name + "/" + string(run.UID)
}

// Of reads a Run's cause from the annotations the manager set when it created the Run. A Run
// without them (one a person created, or one a Trigger started from its schedule or a
// delivery) is its own root, at depth 0. Admission lets nobody but the manager set, change or
// remove an ergon.dev/ annotation on a Run, so a tenant cannot forge either.
func Of(run *ergonv1alpha1.Run) Cause {
	c := Cause{Root: run.Annotations[ergonv1alpha1.AnnotationCauseRoot]}
	if d, err := strconv.Atoi(run.Annotations[ergonv1alpha1.AnnotationDepth]); err == nil && d > 0 {
		c.Depth = d
	}
	if c.Root == "" {
		c.Root = RootKey(run)
	}
	return c
}

// Next is the cause of a Run this one causes: the same root, one deeper.
func (c Cause) Next() Cause {
	return Cause{Root: c.Root, Depth: c.Depth + 1}
}

// Stamp records the cause in a new Run's annotations.
func (c Cause) Stamp(run *ergonv1alpha1.Run) {
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[ergonv1alpha1.AnnotationCauseRoot] = c.Root
	run.Annotations[ergonv1alpha1.AnnotationDepth] = strconv.Itoa(c.Depth)
}

// The limits' defaults: bounded, and safe on a small cluster.
const (
	DefaultMaxDepth     = 10
	DefaultMaxCaused    = 100
	DefaultMaxChildren  = 50
	DefaultMaxPerMinute = 10
)

// The manager flags and chart values that set the limits, for the messages that name them.
const (
	FlagMaxDepth      = "--max-cause-depth"
	FlagMaxCaused     = "--max-caused-runs"
	FlagMaxChildren   = "--max-child-runs"
	FlagMaxPerMinute  = "--max-trigger-runs-per-minute"
	ValueMaxDepth     = "manager.maxCauseDepth"
	ValueMaxCaused    = "manager.maxCausedRuns"
	ValueMaxChildren  = "manager.maxChildRuns"
	ValueMaxPerMinute = "manager.maxTriggerRunsPerMinute"
)

// Limits are the manager's caps on call graphs. A zero field means its default.
type Limits struct {
	// MaxDepth caps a Run's cause depth.
	MaxDepth int
	// MaxCaused caps the Runs one root causes in all, whatever the path (the root not counted).
	MaxCaused int
	// MaxChildren caps the child Runs one Run creates (scene steps, their fan-out and loop
	// units, Scene tool calls), over its whole life.
	MaxChildren int
	// MaxPerMinute caps the Runs one Trigger starts in any minute, from any source.
	MaxPerMinute int
}

// OrDefaults fills the fields left zero with their defaults.
func (l Limits) OrDefaults() Limits {
	or := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	return Limits{MaxDepth: or(l.MaxDepth, DefaultMaxDepth), MaxCaused: or(l.MaxCaused, DefaultMaxCaused),
		MaxChildren: or(l.MaxChildren, DefaultMaxChildren), MaxPerMinute: or(l.MaxPerMinute, DefaultMaxPerMinute)}
}

// Refusal is why a Run is not created: the reason (a condition or step reason) and a message
// naming the limit, its value and how to raise it.
type Refusal struct {
	Reason  string
	Message string
}

// Usage is what a new Run would add to: how many Runs its cause's root has caused so far
// and, for a child Run, how many its parent has created.
type Usage struct {
	// Caused is the number of Runs the root has caused so far, the root not counted.
	Caused int
	// Children is the number of child Runs the parent has created so far.
	Children int
}

// Child decides whether a Run whose cause is parent may create one more child Run, given what
// the root and the parent have caused so far. The depth is checked first: past it, a cycle is
// the likely cause, which the message says.
func (l Limits) Child(parent Cause, u Usage) *Refusal {
	l = l.OrDefaults()
	if r := l.depth(parent); r != nil {
		return r
	}
	if u.Children >= l.MaxChildren {
		return &Refusal{Reason: ergonv1alpha1.ReasonChildRunsExceeded, Message: fmt.Sprintf(
			"the Run has created %d child Runs, the limit of child Runs per Run (%d); raise it with the manager flag %s "+
				"(chart value %s), or split the work over several Runs", u.Children, l.MaxChildren, FlagMaxChildren, ValueMaxChildren)}
	}
	return l.caused(u)
}

// Chained decides whether a Trigger may start a Run because a Run whose cause is source ended.
func (l Limits) Chained(source Cause, u Usage) *Refusal {
	l = l.OrDefaults()
	if r := l.depth(source); r != nil {
		return r
	}
	return l.caused(u)
}

func (l Limits) depth(parent Cause) *Refusal {
	if parent.Depth+1 <= l.MaxDepth {
		return nil
	}
	return &Refusal{Reason: ergonv1alpha1.ReasonDepthExceeded, Message: fmt.Sprintf(
		"Runs would nest deeper than %d (the cause depth limit, counted from Run %s through sub-scenes, Scene tools "+
			"and runCompleted Triggers); is there a cycle of Scenes calling each other or of Triggers starting each other? "+
			"Raise the limit with the manager flag %s (chart value %s)", l.MaxDepth, rootName(parent.Root), FlagMaxDepth, ValueMaxDepth)}
}

func (l Limits) caused(u Usage) *Refusal {
	if u.Caused < l.MaxCaused {
		return nil
	}
	return &Refusal{Reason: ergonv1alpha1.ReasonCausedRunsExceeded, Message: fmt.Sprintf(
		"the root of this chain has caused %d Runs, the limit of Runs one root may cause (%d) through sub-scenes, "+
			"Scene tools and runCompleted Triggers together; raise it with the manager flag %s (chart value %s)",
		u.Caused, l.MaxCaused, FlagMaxCaused, ValueMaxCaused)}
}

// Rate decides whether a Trigger that started started Runs in the last minute may start one
// more. The message holds no count, so it stays the same while the minute stays full.
func (l Limits) Rate(trigger string, started int) *Refusal {
	l = l.OrDefaults()
	if started < l.MaxPerMinute {
		return nil
	}
	return &Refusal{Reason: ergonv1alpha1.ReasonRateLimited, Message: fmt.Sprintf(
		"Trigger %s started as many Runs in the last minute as the limit of Runs per Trigger per minute (%d) allows; "+
			"it starts no more until the minute frees. Raise it with the manager flag %s (chart value %s)",
		trigger, l.MaxPerMinute, FlagMaxPerMinute, ValueMaxPerMinute)}
}

// rootName is the name part of a root key, for messages.
func rootName(root string) string {
	name, _, _ := strings.Cut(root, "/")
	return name
}
