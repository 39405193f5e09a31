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

package planner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/memory"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

func TestDecideMemory(t *testing.T) {
	spec := ergonv1alpha1.SceneSpec{
		Memory: &ergonv1alpha1.SceneMemory{Name: "notes"},
		Steps: []ergonv1alpha1.Step{
			{Name: "a", Agent: &ergonv1alpha1.AgentStep{Prompt: "p"}},
			{Name: "b", Agent: &ergonv1alpha1.AgentStep{Prompt: "p"}},
			step("c"),
		},
	}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "uid-1"}}
	run.Spec.SceneRef.Name = "s"
	owner := &metav1.OwnerReference{Kind: "Scene", Name: "s", UID: "scene-uid"}
	transcript := func(texts ...string) string {
		var b strings.Builder
		b.WriteString(`{"memory":[`)
		for i, t := range texts {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"text":"` + t + `"}`)
		}
		b.WriteString("]}")
		return b.String()
	}
	kept := memory.Store{Version: memory.Version, Entries: []memory.Entry{{Text: "old", Source: "x", At: t0}}}
	// alreadyB is a store that holds step b's writes of this Run: a pass whose status write was lost.
	alreadyB := memory.Store{Version: memory.Version, Entries: []memory.Entry{{Text: "from b", Source: naming.Hash("uid-1", "b"), At: t0}}}
	agentPod := PodRequest{Name: "r-a-1", Step: scene.Steps["a"]}
	for _, tc := range []struct {
		name   string
		memory *MemoryFacts
		store  []StoreRequest
		pods   []PodRequest
		// texts are the entries the write keeps, in order; nil means no write.
		texts  []string
		create bool
		// pinned says the pin is the digest of what the store holds after the pass.
		pinned bool
		events []string
	}{
		{name: "no facts gathered, nothing decided"},
		{name: "writes of two steps are applied in order to a new store",
			memory: &MemoryFacts{Store: "m", Scene: owner},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("one")}, {Step: "b", Transcript: transcript("two", "three")}},
			pods:   []PodRequest{agentPod},
			texts:  []string{"one", "two", "three"}, create: true, pinned: true,
			events: []string{"MemoryUpdated", "MemoryUpdated"}},
		{name: "a store that exists is updated over what it holds",
			memory: &MemoryFacts{Store: "m", Scene: owner, Exists: true, Content: string(kept.Marshal()), ResourceVersion: "7"},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("new")}},
			texts:  []string{"old", "new"}, pinned: true, events: []string{"MemoryUpdated"}},
		{name: "writes applied before are not applied twice",
			memory: &MemoryFacts{Store: "m", Scene: owner, Exists: true, Content: string(alreadyB.Marshal())},
			store:  []StoreRequest{{Step: "b", Transcript: transcript("from b")}},
			pods:   []PodRequest{agentPod}, pinned: true},
		{name: "a container step's output and a transcript without writes write nothing",
			memory: &MemoryFacts{Store: "m", Scene: owner, Exists: true, Content: string(kept.Marshal())},
			store:  []StoreRequest{{Step: "c", Value: transcript("x")}, {Step: "a", Transcript: `{"entries":[]}`}},
			pinned: true},
		{name: "a store not written yet pins nothing",
			memory: &MemoryFacts{Store: "m", Scene: owner}, pods: []PodRequest{agentPod}},
		{name: "no person behind the Run keeps no User memory",
			memory: &MemoryFacts{Scene: owner},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("one")}},
			events: []string{"MemoryNotKept"}},
		{name: "the Scene gone owns no store",
			memory: &MemoryFacts{Store: "m"},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("one")}},
			events: []string{"MemoryNotKept"}},
		{name: "someone else's ConfigMap under the store's name is neither written nor read",
			memory: &MemoryFacts{Store: "m", Scene: owner, Exists: true, Conflict: "not the store"},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("one")}},
			pods:   []PodRequest{agentPod},
			events: []string{ergonv1alpha1.ReasonNameConflict, "MemoryNotKept"}},
		{name: "a store that cannot be read is not overwritten",
			memory: &MemoryFacts{Store: "m", Scene: owner, Exists: true, Content: "{"},
			store:  []StoreRequest{{Step: "a", Transcript: transcript("one")}},
			pinned: true, events: []string{"MemoryNotKept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Facts{Now: t0, Run: run, Scene: scene, Memory: tc.memory}
			p := &Plan{Store: tc.store, Pods: tc.pods}
			DecideMemory(f, p)
			var reasons []string
			for _, e := range p.Events {
				reasons = append(reasons, e.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events = %v, want %v", reasons, tc.events)
			}
			held := ""
			if tc.memory != nil {
				held = tc.memory.Content
			}
			if w := p.MemoryWrite; tc.texts == nil {
				if w != nil {
					t.Fatalf("write = %+v, want none", w)
				}
			} else {
				if w == nil {
					t.Fatal("no write, want one")
				}
				store, err := memory.Read([]byte(w.Content))
				if err != nil {
					t.Fatal(err)
				}
				var texts []string
				for _, e := range store.Entries {
					texts = append(texts, e.Text)
				}
				if strings.Join(texts, ",") != strings.Join(tc.texts, ",") {
					t.Errorf("entries = %v, want %v", texts, tc.texts)
				}
				if (w.ResourceVersion == "") != tc.create || w.ConfigMap != "m" || w.ResourceVersion != tc.memory.ResourceVersion {
					t.Errorf("write = %+v", w)
				}
				if len(w.Owners) != 1 || w.Owners[0].UID != owner.UID {
					t.Errorf("owners = %v, want the Scene", w.Owners)
				}
				held = w.Content
			}
			want := ""
			if tc.pinned {
				want = wire.Digest([]byte(held))
			}
			if p.MemoryPin != want {
				t.Errorf("pin = %q, want %q", p.MemoryPin, want)
			}
		})
	}
}
