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

package kubectlergon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

func TestParseParams(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		args    []string
		want    map[string]string
		wantErr string
	}{
		{name: "no params at all", want: map[string]string{}},
		{name: "-p gives key=value, the value may hold =", args: []string{"a=1", "b=x=y", "c="},
			want: map[string]string{"a": "1", "b": "x=y", "c": ""}},
		{name: "a later -p wins", args: []string{"a=1", "a=2"}, want: map[string]string{"a": "2"}},
		{name: "the file's scalars become their YAML text", file: "sprint: 43\nurgent: true\ntitle: Sprint 43\nnone:\n",
			want: map[string]string{"sprint": "43", "urgent": "true", "title": "Sprint 43", "none": ""}},
		{name: "-p wins over the file", file: `{"sprint": "43", "team": "core"}`, args: []string{"sprint=44"},
			want: map[string]string{"sprint": "44", "team": "core"}},
		{name: "-p without = is refused", args: []string{"sprint"}, wantErr: `-p "sprint": write a param as key=value`},
		{name: "-p without a key is refused", args: []string{"=43"}, wantErr: `write a param as key=value`},
		{name: "a map value in the file is refused by name", file: "spec:\n  a: 1\n", wantErr: `param "spec" in the param file is a map`},
		{name: "a list value in the file is refused by name", file: "ids: [1, 2]\n", wantErr: `param "ids" in the param file is a list`},
		{name: "a file that is not a map is refused", file: "- a\n- b\n", wantErr: "not a map of param names to values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseParams([]byte(c.file), c.args)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		phase ergonv1alpha1.RunPhase
		want  int
	}{
		{ergonv1alpha1.RunSucceeded, 0}, {ergonv1alpha1.RunFailed, 1}, {ergonv1alpha1.RunCancelled, 2},
	}
	for _, c := range cases {
		if got := PhaseExitCode(c.phase); got != c.want {
			t.Errorf("PhaseExitCode(%s) = %d, want %d", c.phase, got, c.want)
		}
	}
	if ExitCode(nil) != 0 || ExitCode(errors.New("boom")) != 1 || ExitCode(&ExitError{Code: 2}) != 2 {
		t.Error("ExitCode: nil is 0, any error 1, an ExitError its code")
	}
}

// run runs the plugin without a cluster: these commands must fail before they need one.
func runOffline(args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	opts := &Options{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}}
	code = Main(context.Background(), opts, append(args, "--kubeconfig", "/nonexistent/kubeconfig"))
	return code, o.String(), e.String()
}

func TestArgumentParsing(t *testing.T) {
	cases := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"run"}, "accepts 1 arg(s), received 0"},
		{[]string{"run", "s", "-p", "noequals"}, `-p "noequals": write a param as key=value`},
		{[]string{"run", "s", "--param-file", "/nonexistent/params.yaml"}, "no such file"},
		{[]string{"get"}, "requires at least 1 arg"},
		{[]string{"get", "pods"}, `no kind "pods"; get lists runs, scenes, gates, triggers, workspaces`},
		{[]string{"get", "runs", "-o", "xml"}, "-o xml: the formats are json, yaml and name"},
		{[]string{"output", "r"}, "accepts 2 arg(s), received 1"},
		{[]string{"logs"}, "accepts between 1 and 2 arg(s), received 0"},
		{[]string{"approve"}, "accepts 1 arg(s), received 0"},
		{[]string{"reject", "g", "--option", "x"}, "unknown flag: --option"},
		{[]string{"trigger", "run"}, "accepts 1 arg(s), received 0"},
		{[]string{"lint"}, "requires at least 1 arg"},
		{[]string{"lint", "/nonexistent/scene.yaml"}, "no such file"},
		{[]string{"tree", "a", "b"}, "accepts 1 arg(s), received 2"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runOffline(c.args...)
			if code != 1 || !strings.Contains(errOut, c.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, errOut, c.wantErr)
			}
		})
	}
}

func TestVersionWithoutACluster(t *testing.T) {
	code, out, _ := runOffline("version", "--client")
	if code != 0 || !strings.HasPrefix(out, "Client Version: ") {
		t.Fatalf("exit %d, out %q", code, out)
	}
}

func TestStripFramesHidesWhatTheEntrypointFrames(t *testing.T) {
	var log bytes.Buffer
	log.WriteString("starting\n")
	if _, err := wire.Write(&log, bytes.Repeat([]byte("x"), 10_000), 0); err != nil {
		t.Fatal(err)
	}
	log.WriteString("done\n\n")
	got := wire.StripFrames(&log)
	want := []string{"starting", "", "[a framed output: read it with kubectl ergon output]", "done", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if tail := Tail(got, 2); strings.Join(tail, "|") != "[a framed output: read it with kubectl ergon output]|done" {
		t.Fatalf("Tail drops trailing empty lines and keeps the last n: %q", tail)
	}
}

// podLog is a pod's log as the API server serves it: 400 while its container waits to
// start, the log once it has, 404 once the pod is gone.
type podLog struct {
	mu      sync.Mutex
	waiting int // answers of 400 before the container starts
	gone    bool
	log     string
	tries   int
}

func (l *podLog) Log(_ context.Context, _, pod string, _ bool, _ *int64) (io.ReadCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tries++
	switch {
	case l.gone:
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod)
	case l.tries <= l.waiting:
		return nil, apierrors.NewBadRequest(`container "step" in pod "` + pod + `" is waiting to start: ContainerCreating`)
	}
	return io.NopCloser(strings.NewReader(l.log)), nil
}

func TestTailsFollowALogOnceItsContainerStarts(t *testing.T) {
	run := &ergonv1alpha1.Run{}
	run.Namespace = "ns"
	run.Status.Steps = []ergonv1alpha1.StepStatus{{Name: "compile", Phase: ergonv1alpha1.StepRunning, PodName: "compile-1"}}
	for _, tc := range []struct {
		name      string
		src       *podLog
		wantLines string
		wantRead  bool
	}{
		{"started", &podLog{log: "a\nb\nc\n"}, "b|c", true},
		{"pending a while, then deleted soon after it failed", &podLog{waiting: 3, log: "compiling\nerror: broken\n"}, "compiling|error: broken", true},
		{"gone before it started", &podLog{gone: true}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			logs := newTails(tc.src, 2, nil)
			logs.retry = time.Millisecond
			logs.follow(ctx, run)
			got, ok := logs.get("compile-1")
			tc.src.mu.Lock()
			tc.src.gone = true // Ergon deletes a failed attempt's pod: the end of the Run is too late
			tc.src.mu.Unlock()
			if ok != tc.wantRead || strings.Join(got, "|") != tc.wantLines {
				t.Fatalf("got %q (read %v), want %q (read %v)", got, ok, tc.wantLines, tc.wantRead)
			}
		})
	}
}

func TestTailsDoNotSpinOnALogStillRefused(t *testing.T) {
	// The log is refused however long one waits, and the pod says its container started.
	src := &podLog{waiting: 1 << 30}
	logs := newTails(src, 2, func(context.Context, string, string) error { return nil })
	logs.retry = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := logs.open(ctx, "ns", "compile-1", nil); err == nil {
		t.Fatal("open succeeded on a log that is refused")
	}
	// Two tries per retry interval at most: after the pod's start, and after the wait.
	if src.tries > 2*(500/50+1) {
		t.Fatalf("%d tries to read the log in 500 ms, with a retry every 50 ms", src.tries)
	}
}

func TestTailsGiveUpOnALogRefusedAfterItsContainerStarted(t *testing.T) {
	// A pod that ended without ever starting its container: it says it started (ended), and
	// its log is refused for good.
	src := &podLog{waiting: 1 << 30}
	logs := newTails(src, 2, func(context.Context, string, string) error { return nil })
	logs.retry = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := logs.open(ctx, "ns", "compile-1", nil)
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("open returned %v, want the API server's refusal", err)
	}
	// Each refusal after the pod said it started is one more try once the retry interval passed.
	if src.tries != 2*refusedAfterStart {
		t.Fatalf("%d tries to read the log, want %d", src.tries, 2*refusedAfterStart)
	}
}

func TestPodOfAttempt(t *testing.T) {
	s := &ergonv1alpha1.StepStatus{Name: "build", Attempts: 3, PodName: "p3",
		History: []ergonv1alpha1.AttemptStatus{{Attempt: 1, PodName: "p1"}, {Attempt: 2, PodName: "p2"}}}
	for attempt, want := range map[int32]string{0: "p3", 3: "p3", 1: "p1", 2: "p2"} {
		if got, err := PodOfAttempt(s, attempt); err != nil || got != want {
			t.Errorf("attempt %d: %q %v, want %q", attempt, got, err, want)
		}
	}
	if _, err := PodOfAttempt(s, 4); err == nil || !strings.Contains(err.Error(), "attempts 1 to 3") {
		t.Errorf("attempt 4: %v", err)
	}
	if _, err := PodOfAttempt(&ergonv1alpha1.StepStatus{Name: "review", Gate: "g"}, 0); err == nil ||
		!strings.Contains(err.Error(), "a gate step") {
		t.Errorf("a gate step has no pod: %v", err)
	}
}

func TestInstancePods(t *testing.T) {
	s := &ergonv1alpha1.StepStatus{Name: "work", Instances: &ergonv1alpha1.InstancesStatus{Total: 5, States: "SRFPK",
		Attempts: []int32{1, 2, 3, 0, 0}}}
	got := InstancePods("r", s)
	want := []string{naming.UnitPodName("r", "work", 0, 0, 1), naming.UnitPodName("r", "work", 1, 0, 2),
		naming.UnitPodName("r", "work", 2, 0, 3), "", ""}
	if !slices.Equal(got, want) {
		t.Fatalf("InstancePods = %q, want %q", got, want)
	}
	s.Instances.Iterations = []int32{4, 0, 0, 0, 0}
	if got := InstancePods("r", s)[0]; got != naming.UnitPodName("r", "work", 0, 4, 1) {
		t.Fatalf("a looping instance's pod %q, want its iteration's", got)
	}
}

func TestDecide(t *testing.T) {
	gate := func(min int32) *ergonv1alpha1.Gate {
		return &ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{Options: []string{"approve", "reject"}, MinApprovals: &min}}
	}
	g := gate(1)
	if err := Decide(g, "approve", "ship it", nil); err != nil || g.Spec.Decision == nil ||
		g.Spec.Decision.Option != "approve" || g.Spec.Decision.Comment != "ship it" || g.Spec.Decision.User != "" {
		t.Errorf("one approval sets the decision and leaves the user to the webhook: %+v %v", g.Spec.Decision, err)
	}
	var refusal *RefusedError
	if err := Decide(g, "reject", "", nil); !errors.As(err, &refusal) || !strings.Contains(err.Error(), "already decided") {
		t.Errorf("a decided Gate is a refusal: %v", err)
	}
	g = gate(2)
	if err := Decide(g, "approve", "", nil); err != nil || g.Spec.Decision != nil || len(g.Spec.Approvals) != 1 {
		t.Errorf("two approvals: a vote is added: %+v %v", g.Spec, err)
	}
	if err := Decide(gate(1), "publish", "", nil); !errors.As(err, &refusal) || !strings.Contains(err.Error(), `no option "publish"`) {
		t.Errorf("an option the Gate lacks is a refusal: %v", err)
	}
	values := &apiextensionsv1.JSON{Raw: []byte(`{"version":"1.2"}`)}
	if err := Decide(gate(1), "", "", values); !errors.As(err, &refusal) || !strings.Contains(err.Error(), "asks no input") {
		t.Errorf("values for a Gate that asks none: %v", err)
	}
	g = gate(1)
	g.Spec.Input = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}
	if err := Decide(g, "", "", values); err != nil || g.Spec.Decision == nil || g.Spec.Decision.Values != values {
		t.Errorf("values answer an input Gate, the option left to the webhook: %+v %v", g.Spec.Decision, err)
	}
	g = gate(2)
	g.Spec.Input = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}
	if err := Decide(g, "", "", values); err != nil || len(g.Spec.Approvals) != 1 || g.Spec.Approvals[0].Values != values {
		t.Errorf("values go with a vote: %+v %v", g.Spec.Approvals, err)
	}
}

func TestTransitionsPrintOnlyWhatChanged(t *testing.T) {
	run := &ergonv1alpha1.Run{}
	run.Name, run.Namespace = "r", "ns"
	p := &progress{}
	run.Status.Phase = ergonv1alpha1.RunRunning
	run.Status.Steps = []ergonv1alpha1.StepStatus{{Name: "a", Phase: ergonv1alpha1.StepRunning, Attempts: 1}}
	got := p.Transitions(run)
	if strings.Join(got, "|") != "step a Running|Run r Running" {
		t.Fatalf("first: %q", got)
	}
	if got := p.Transitions(run); len(got) != 0 {
		t.Fatalf("nothing changed: %q", got)
	}
	run.Status.Steps[0] = ergonv1alpha1.StepStatus{Name: "a", Phase: ergonv1alpha1.StepRetrying, Attempts: 1,
		Reason: "ExitCode", Message: "exit 3"}
	run.Status.Steps = append(run.Status.Steps, ergonv1alpha1.StepStatus{Name: "ok", Phase: ergonv1alpha1.StepWaiting, Gate: "r-ok"})
	got = p.Transitions(run)
	want := "step a Retrying: ExitCode: exit 3|step ok Waiting: waiting on Gate r-ok; decide with: kubectl ergon approve r-ok -n ns"
	if strings.Join(got, "|") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
