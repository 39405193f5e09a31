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

package console

import (
	"strconv"
	"strings"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Graph is a Scene's steps as the page draws them: the browser lays it out (dagre), the
// server only says what is connected to what, in which phase each step is, and, for a large
// graph, which steps are drawn together as one group until the viewer opens it. The form is
// compact: a step names its dependencies by their index in Nodes, and the label of an edge is
// the when of the step it leads to.
type Graph struct {
	Nodes []GraphNode `json:"nodes"`
	// Groups collapse a large graph (more than GroupAbove steps) into at most MaxTopLevel
	// things to draw; empty for a smaller one.
	Groups []GraphGroup `json:"groups,omitempty"`
}

// GraphNode is a step.
type GraphNode struct {
	Name string `json:"name"`
	// Kind is container, agent, gate or scene.
	Kind string `json:"kind"`
	// When is the step's condition, if any.
	When string `json:"when,omitempty"`
	// Phase is the step's phase in a Run; empty for a Scene, or a step that has not started.
	Phase string `json:"phase,omitempty"`
	// Deps are the steps this one depends on, by index in Graph.Nodes.
	Deps []int `json:"deps,omitempty"`
	// Group is the index in Graph.Groups of the group drawn in its place, plus one; 0 when
	// the step is drawn on its own.
	Group int `json:"group,omitempty"`
}

// kindScene is a step that calls another Scene; also the key of a Scene in answers.
const kindScene = "scene"

// stepKind names what a step is.
func stepKind(s *ergonv1alpha1.Step) string {
	switch {
	case s.Agent != nil:
		return "agent"
	case s.Gate != nil:
		return "gate"
	case s.Scene != nil:
		return kindScene
	}
	return "container"
}

// SceneGraph is the graph of a Scene's steps, coloured by the phases of a Run's steps when
// steps is not empty, and grouped when it is large. A dependency on an unknown step (which
// admission refuses) is dropped.
func SceneGraph(spec *ergonv1alpha1.SceneSpec, steps []ergonv1alpha1.StepStatus) Graph {
	g := Graph{Nodes: []GraphNode{}}
	if spec == nil {
		return g
	}
	phases := make(map[string]string, len(steps))
	for _, s := range steps {
		phases[s.Name] = string(s.Phase)
	}
	index := make(map[string]int, len(spec.Steps))
	for i := range spec.Steps {
		index[spec.Steps[i].Name] = i
	}
	for i := range spec.Steps {
		s := &spec.Steps[i]
		n := GraphNode{Name: s.Name, Kind: stepKind(s), When: s.When, Phase: phases[s.Name]}
		for _, d := range s.DependsOn {
			if j, ok := index[d]; ok {
				n.Deps = append(n.Deps, j)
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	g.Groups = groupGraph(g.Nodes)
	return g
}

// RunSummary is a Run as the run list shows it.
type RunSummary struct {
	Namespace string     `json:"namespace,omitempty"`
	Name      string     `json:"name"`
	UID       string     `json:"uid,omitempty"`
	Scene     string     `json:"scene"`
	Trigger   string     `json:"trigger,omitempty"`
	Phase     string     `json:"phase"`
	Done      int        `json:"done"`
	Total     int        `json:"total"`
	Created   time.Time  `json:"created"`
	Started   *time.Time `json:"started,omitempty"`
	Finished  *time.Time `json:"finished,omitempty"`
	// Waiting names the steps waiting on a Gate.
	Waiting []string `json:"waiting,omitempty"`
	// StartedBy is who created the Run, as admission recorded it.
	StartedBy string `json:"startedBy,omitempty"`
	// Archived says the summary comes from the archive: the Run ended, and may be gone from
	// the cluster.
	Archived bool `json:"archived,omitempty"`
}

// Summarize makes a Run's summary; the Trigger is the label the Trigger controller sets.
func Summarize(run *ergonv1alpha1.Run) RunSummary {
	s := RunSummary{Namespace: run.Namespace, Name: run.Name, UID: string(run.UID), Scene: run.Spec.SceneRef.Name,
		Trigger: run.Labels[ergonv1alpha1.LabelTrigger], Phase: string(run.Status.Phase), Created: run.CreationTimestamp.Time,
		StartedBy: run.Annotations[ergonv1alpha1.AnnotationCreatedBy]}
	if s.Phase == "" {
		s.Phase = string(ergonv1alpha1.RunPending)
	}
	s.Done, s.Total = parseProgress(run.Status.Progress)
	if t := run.Status.StartedAt; t != nil {
		s.Started = &t.Time
	}
	if t := run.Status.FinishedAt; t != nil {
		s.Finished = &t.Time
	}
	for _, st := range run.Status.Steps {
		if st.Phase == ergonv1alpha1.StepWaiting {
			s.Waiting = append(s.Waiting, st.Name)
		}
	}
	return s
}

// parseProgress reads "3/7"; anything else is 0 of 0.
func parseProgress(p string) (done, total int) {
	a, b, ok := strings.Cut(p, "/")
	if !ok {
		return 0, 0
	}
	d, err1 := strconv.Atoi(a)
	t, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || d < 0 || t < d {
		return 0, 0
	}
	return d, t
}
