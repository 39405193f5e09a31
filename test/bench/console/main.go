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

// Command console measures the web console against a real API server (envtest) and a real
// headless Chromium: the time to first paint of the Run detail of large Runs (a 1,000-step
// fan-out, a 1,000-step chain, and 10 fan-out steps of 1,000 instances each: 10,002 steps),
// the latency from a status write to the page's DOM change (p50/p99), and the server's memory
// with 50 open live streams. Run it with make bench-console; it is not part of make test.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/console"
	"github.com/ergon-dev/ergon/test/chromium"
)

const ns = "bench"

func main() {
	samples := flag.Int("samples", 100, "status writes whose latency to the DOM is measured")
	sessions := flag.Int("sessions", 50, "live streams held open for the memory figure")
	shots := flag.String("screenshots", "", "directory to save screenshots of the pages in, if set")
	flag.Parse()
	if err := run(*samples, *sessions, *shots); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// paintsPerRun is how many times each Run's detail is opened; the median is reported.
const paintsPerRun = 5

// actionTimeout bounds every browser action, so that a page that never draws fails the
// bench instead of stalling it.
const actionTimeout = 90 * time.Second

func do(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

func run(samples, sessions int, shots string) error {
	logf.SetLogger(logr.Discard())
	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = ergonv1alpha1.AddToScheme(scheme)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start envtest (is KUBEBUILDER_ASSETS set, and the command run from the repository root?): %w", err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	token, err := viewerToken(ctx, cfg, admin)
	if err != nil {
		return err
	}
	var runs []largeRun
	for _, mk := range []runMaker{fanOut, chain, fanOutInstances} {
		r, err := createRun(ctx, admin, mk)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	srv, err := console.New(console.Config{APIServer: &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}},
		Key: key, DefaultNamespace: ns, MaxStreams: 1000, MaxStreamsPerSession: 1000})
	if err != nil {
		return err
	}
	ts := httptest.NewTLSServer(srv.Handler())
	defer ts.Close()

	bctx, stop, err := chromium.Start()
	if err != nil {
		return err
	}
	defer stop()
	// The first action starts the browser, bound to the context it is given: not one with a
	// timeout, which would close the browser when the action ends.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`true`)); err != nil {
		return fmt.Errorf("start Chromium: %w", err)
	}
	if err := do(bctx, login(ts.URL, token)...); err != nil {
		return fmt.Errorf("log in: %w", err)
	}

	// Time to first paint of the Run detail: from navigation to every top-level step or group
	// of the graph drawn with its phase (the page marks the graph once it has coloured it).
	for _, r := range runs {
		var paints []time.Duration
		for range paintsPerRun {
			start := time.Now()
			if err := do(bctx, chromedp.Navigate(ts.URL+"/#/ns/"+ns+"/runs/"+r.run.Name),
				chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#graph[data-drawn="%d"]`, r.top)))); err != nil {
				return fmt.Errorf("open the Run detail of %s: %w", r.what, err)
			}
			paints = append(paints, time.Since(start))
			if err := do(bctx, chromedp.Navigate("about:blank")); err != nil {
				return err
			}
		}
		fmt.Printf("console, first paint of the Run detail, %s (%d steps, %d drawn at the top level): median %v of %v\n",
			r.what, r.steps, r.top, pct(paints, 50), paints)
	}

	// Latency from a status write to the DOM, on the 1,000-step fan-out: the page records when
	// its group's count of succeeded steps first shows each number; the write's time is taken
	// just before it is sent.
	run := runs[0].run
	if err := do(bctx, chromedp.Navigate(ts.URL+"/#/ns/"+ns+"/runs/"+run.Name),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#graph[data-drawn="%d"]`, runs[0].top)))); err != nil {
		return err
	}
	if shots != "" {
		if err := screenshot(bctx, shots, "run-1000-steps.png"); err != nil {
			return err
		}
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__at = {};
		new MutationObserver(() => { const t = document.querySelector("#graph g.node.group .kind");
		  const m = t && /(\d+) succeeded/.exec(t.textContent); if (m && !window.__at[m[1]]) window.__at[m[1]] = Date.now(); })
		.observe(document.getElementById("graph"), {subtree: true, childList: true, characterData: true, attributes: true}); true`)); err != nil {
		return err
	}
	var lat []time.Duration
	for i := range samples {
		step := fmt.Sprintf("s%04d", 1+i)
		patch := client.MergeFrom(run.DeepCopy())
		for j := range run.Status.Steps {
			if run.Status.Steps[j].Name == step {
				run.Status.Steps[j].Phase = ergonv1alpha1.StepSucceeded
			}
		}
		sent := time.Now()
		if err := admin.Status().Patch(ctx, run, patch); err != nil {
			return err
		}
		var at float64
		deadline := time.Now().Add(10 * time.Second)
		for at == 0 && time.Now().Before(deadline) {
			v, err := chromedp.Run(bctx, chromedp.Evaluate[float64](fmt.Sprintf(`window.__at["%d"] || 0`, i+1)))
			if err != nil {
				return err
			}
			at = v
			if at == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		if at == 0 {
			return fmt.Errorf("the page never counted %d succeeded steps", i+1)
		}
		lat = append(lat, time.UnixMilli(int64(at)).Sub(sent))
	}

	// Memory: the server's heap with sessions live streams open, each a logged-in session.
	before := heap()
	var cancels []context.CancelFunc
	for range sessions {
		c, err := openStream(ts, token)
		if err != nil {
			return err
		}
		cancels = append(cancels, c)
	}
	time.Sleep(2 * time.Second)
	after := heap()
	for _, c := range cancels {
		c()
	}

	fmt.Printf("console, status write to DOM change over %d writes: p50 %v, p99 %v, max %v\n",
		len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100))
	fmt.Printf("console, server heap in use with %d live streams open: %.1f MiB (%.1f MiB before, %.0f KiB per stream)\n",
		sessions, mib(after), mib(before), (float64(after)-float64(before))/1024/float64(sessions))
	return nil
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))].Round(time.Millisecond / 10)
}

// viewerToken is a token of a ServiceAccount bound to ergon-viewer in the namespace.
func viewerToken(ctx context.Context, cfg *rest.Config, admin client.Client) (string, error) {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bench-viewer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "pods/log"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bench-viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "viewer", Namespace: ns}}},
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			return "", err
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// runMaker makes a large Run: what it is, its Scene and its steps' status.
type runMaker func() (string, ergonv1alpha1.SceneSpec, []ergonv1alpha1.StepStatus)

// largeRun is a Run the bench opens, every step Running or done.
type largeRun struct {
	what  string
	run   *ergonv1alpha1.Run
	steps int // steps and instances
	top   int // what the page draws: groups and the steps on their own
}

func container(name string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps,
		Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"true"}}}
}

func running(name string) ergonv1alpha1.StepStatus {
	now := metav1.Now()
	return ergonv1alpha1.StepStatus{Name: name, Phase: ergonv1alpha1.StepRunning, Attempts: 1, StartedAt: &now, PodName: name + "-1"}
}

// fanOut is one step, 998 in parallel after it, and one after them all, every step but the
// last Running.
func fanOut() (string, ergonv1alpha1.SceneSpec, []ergonv1alpha1.StepStatus) {
	const n = 1000
	spec, steps := ergonv1alpha1.SceneSpec{}, []ergonv1alpha1.StepStatus(nil)
	var all []string
	for j := range n - 1 {
		name := fmt.Sprintf("s%04d", j)
		if j == 0 {
			spec.Steps = append(spec.Steps, container(name))
		} else {
			spec.Steps = append(spec.Steps, container(name, "s0000"))
			all = append(all, name)
		}
		steps = append(steps, running(name))
	}
	spec.Steps = append(spec.Steps, container(fmt.Sprintf("s%04d", n-1), all...))
	return "a fan-out of 1,000 steps", spec, steps
}

// chain is 1,000 steps one after another, the first half done, the next one Running.
func chain() (string, ergonv1alpha1.SceneSpec, []ergonv1alpha1.StepStatus) {
	const n = 1000
	spec, steps := ergonv1alpha1.SceneSpec{}, []ergonv1alpha1.StepStatus(nil)
	for j := range n {
		name, deps := fmt.Sprintf("c%04d", j), []string(nil)
		if j > 0 {
			deps = []string{fmt.Sprintf("c%04d", j-1)}
		}
		spec.Steps = append(spec.Steps, container(name, deps...))
		switch st := running(name); {
		case j < n/2:
			st.Phase = ergonv1alpha1.StepSucceeded
			steps = append(steps, st)
		case j == n/2:
			steps = append(steps, st)
		}
	}
	return "a chain of 1,000 steps", spec, steps
}

// fanOutInstances is one step, 10 steps of 1,000 forEach instances each after it, and one
// after them: 10,002 steps, their instances half done.
func fanOutInstances() (string, ergonv1alpha1.SceneSpec, []ergonv1alpha1.StepStatus) {
	const width, instances = 10, 1000
	items := make([]int, instances)
	for j := range items {
		items[j] = j
	}
	raw, _ := json.Marshal(items)
	spec := ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{container("first")}}
	steps := []ergonv1alpha1.StepStatus{running("first")}
	steps[0].Phase = ergonv1alpha1.StepSucceeded
	var all []string
	for j := range width {
		name := fmt.Sprintf("each%02d", j)
		st := container(name, "first")
		st.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}}
		spec.Steps = append(spec.Steps, st)
		all = append(all, name)
		status := running(name)
		states := strings.Repeat("S", instances/2) + strings.Repeat("R", 10) + strings.Repeat("P", instances/2-10)
		status.Instances = &ergonv1alpha1.InstancesStatus{Total: instances, Succeeded: instances / 2, Running: 10, States: states}
		steps = append(steps, status)
	}
	spec.Steps = append(spec.Steps, container("last", all...))
	return "10 fan-out steps of 1,000 instances (10,002 steps)", spec, steps
}

// createRun creates a Run of the spec mk makes, its snapshot in a ConfigMap as the Run
// controller keeps a large one, and its steps' status.
func createRun(ctx context.Context, admin client.Client, mk runMaker) (largeRun, error) {
	what, spec, steps := mk()
	name := fmt.Sprintf("big-%d", len(steps)+len(spec.Steps))
	b, err := json.Marshal(spec)
	if err != nil {
		return largeRun{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-snapshot"}, Data: map[string]string{"spec": string(b)}}
	if err := admin.Create(ctx, cm); err != nil {
		return largeRun{}, err
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "big"}}}
	if err := admin.Create(ctx, run); err != nil {
		return largeRun{}, err
	}
	total := 0
	for _, st := range spec.Steps {
		if st.ForEach != nil {
			var items []json.RawMessage
			_ = json.Unmarshal(st.ForEach.Items.Raw, &items)
			total += len(items)
		} else {
			total++
		}
	}
	sum := sha256.Sum256(b)
	now := metav1.NewTime(time.Now().Add(-5 * time.Second).Truncate(time.Second)) // before its steps started
	run.Status = ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, StartedAt: &now, Progress: fmt.Sprintf("0/%d", len(spec.Steps)),
		SceneSnapshotRef: &ergonv1alpha1.OutputRef{ConfigMap: cm.Name, Key: "spec"}, SceneSnapshotSHA256: hex.EncodeToString(sum[:]),
		Steps: steps}
	if err := admin.Status().Update(ctx, run); err != nil {
		return largeRun{}, err
	}
	g := console.SceneGraph(&spec, steps)
	top := len(g.Groups)
	for _, n := range g.Nodes {
		if n.Group == 0 {
			top++
		}
	}
	return largeRun{what: what, run: run, steps: total, top: top}, nil
}

func login(url, token string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{chromedp.Navigate(url + "/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#top"))}
}

func screenshot(ctx context.Context, dir, name string) error {
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), png, 0o644)
}

// openStream logs in a new session and holds its live stream open until cancelled.
func openStream(ts *httptest.Server, token string) (context.CancelFunc, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: ts.Client().Transport, Jar: jar}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/login", strings.NewReader(fmt.Sprintf(`{"token":%q}`, token)))
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	_ = res.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/namespaces/"+ns+"/events", nil)
	res, err = c.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		defer func() { _ = res.Body.Close() }()
		sc := bufio.NewScanner(res.Body)
		n := 0
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"watching":true`) {
				if n++; n == 4 {
					close(ready)
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cancel()
		return nil, fmt.Errorf("a live stream did not start watching")
	}
	return cancel, nil
}
