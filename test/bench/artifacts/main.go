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

// Command artifacts measures, on a real cluster with Ergon installed (the chart's default
// directory store), how fast artifacts move between steps, against a bare pod that copies the
// same bytes from one of its volumes to another (the node's disk, which the store is on too),
// and how much memory the manager takes while N steps upload at once: it must stream, not
// hold them. It reads $KUBECONFIG, finds the manager's process on this machine (the local
// cluster runs its containers here) to read its resident memory, and makes and deletes a
// namespace of its own. Run it with `make bench-artifacts`; it is not part of make test.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func main() {
	mib := flag.Int("mib", 100, "MiB of each artifact")
	steps := flag.Int("steps", 10, "steps that upload at once, for the manager's memory")
	image := flag.String("image", "ergon/busybox:dev", "image of the steps and the bare pod; on the node already")
	timeout := flag.Duration("timeout", 10*time.Minute, "how long a Run may take")
	flag.Parse()

	scheme := k8sruntime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(ergonv1alpha1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	must(err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(err)
	cs, err := kubernetes.NewForConfig(cfg)
	must(err)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-artifacts-"}}
	must(c.Create(ctx, ns))
	defer func() { _ = c.Delete(ctx, ns) }()
	size := *mib << 20

	// The floor: a bare pod copies the bytes from one emptyDir to another.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare-copy", Namespace: ns.Name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Volumes: []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "copy", Image: *image, ImagePullPolicy: corev1.PullIfNotPresent,
			// /proc/uptime: busybox's date has no nanoseconds.
			Command: []string{"sh", "-c", fmt.Sprintf(`head -c %d /dev/urandom > /a/data; sync
s=$(cut -d' ' -f1 /proc/uptime); cp /a/data /b/data; sync; e=$(cut -d' ' -f1 /proc/uptime); echo "copied from $s to $e"`, size)},
			VolumeMounts: []corev1.VolumeMount{{Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b"}}}},
	}}
	must(c.Create(ctx, bare))
	must(waitPod(ctx, c, bare, *timeout))
	log := podLog(ctx, cs, ns.Name, bare.Name, "copy")
	m := regexp.MustCompile(`copied from ([0-9.]+) to ([0-9.]+)`).FindStringSubmatch(log)
	if m == nil {
		fail("the bare pod said %q", log)
	}
	from, _ := strconv.ParseFloat(m[1], 64)
	to, _ := strconv.ParseFloat(m[2], 64)
	took := max(to-from, 0.01)
	fmt.Printf("bare pod, %d MiB emptyDir -> emptyDir (cp; sync): %.2f s, %.0f MiB/s\n", *mib, took, float64(*mib)/took)

	// One artifact from a step to the next.
	make1 := step("make", fmt.Sprintf(`head -c %d /dev/urandom > "$ERGON_ARTIFACTS/data.bin"`, size), *image)
	make1.Artifacts = []ergonv1alpha1.Artifact{{Name: "data.bin"}}
	take := step("take", `sha256sum "$ERGON_INPUT_ARTIFACTS/make/data.bin" | cut -c1-64 | tr -d '\n' > "$ERGON_OUTPUT"`, *image)
	take.DependsOn = []string{"make"}
	take.InputArtifacts = []ergonv1alpha1.InputArtifact{{Step: "make", Name: "data.bin"}}
	stop := collectLines(ctx, c, cs, ns.Name)
	runScene(ctx, c, ns.Name, "pass", *timeout, make1, take)
	for _, line := range stop() {
		fmt.Println(line)
	}

	// N steps upload at once, while the manager's memory is sampled.
	pid, err := managerPID()
	must(err)
	before := rss(pid)
	var many []ergonv1alpha1.Step
	for i := range *steps {
		s := step(fmt.Sprintf("up-%d", i), fmt.Sprintf(`head -c %d /dev/urandom > "$ERGON_ARTIFACTS/data.bin"`, size), *image)
		s.Artifacts = []ergonv1alpha1.Artifact{{Name: "data.bin"}}
		many = append(many, s)
	}
	var mu sync.Mutex
	peak := before
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
				if r := rss(pid); r > 0 {
					mu.Lock()
					peak = max(peak, r)
					mu.Unlock()
				}
			}
		}
	}()
	start := time.Now()
	stop = collectLines(ctx, c, cs, ns.Name)
	runScene(ctx, c, ns.Name, "many", *timeout, many...)
	close(done)
	var rates []float64
	for _, line := range stop() {
		if m := rateRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "step up-") {
			r, _ := strconv.ParseFloat(m[1], 64)
			rates = append(rates, r)
		}
	}
	slices.Sort(rates)
	if len(rates) > 0 {
		fmt.Printf("%d uploads at once: %.0f to %.0f MiB/s each, median %.0f\n", len(rates), rates[0], rates[len(rates)-1],
			rates[len(rates)/2])
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("%d steps uploading %d MiB each: Run in %s; manager resident memory %d MiB before, %d MiB at most (+%d MiB)\n",
		*steps, *mib, time.Since(start).Round(time.Millisecond), before>>20, peak>>20, (peak-before)>>20)
}

var rateRE = regexp.MustCompile(`\(([0-9.]+) MiB/s\)`)

// collectLines reads, as step pods end, what Ergon's artifact binary said in their logs
// (before the Run's cleanup deletes the pods); the function it returns stops and gives them.
func collectLines(ctx context.Context, c client.Client, cs *kubernetes.Clientset, ns string) func() []string {
	var mu sync.Mutex
	var lines []string
	seen := map[string]bool{}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ergonv1alpha1.LabelStep}); err == nil {
				for _, p := range pods.Items {
					ended := len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Terminated != nil
					if seen[p.Name] || !ended {
						continue
					}
					seen[p.Name] = true
					for line := range strings.SplitSeq(podLog(ctx, cs, ns, p.Name, "step"), "\n") {
						if rest, ok := strings.CutPrefix(line, "ergon-artifacts: "); ok {
							mu.Lock()
							lines = append(lines, "step "+p.Labels[ergonv1alpha1.LabelStep]+": "+rest)
							mu.Unlock()
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return lines
	}
}

func step(name, script, image string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Container: &ergonv1alpha1.ContainerStep{Image: image,
		ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script}}}
}

// runScene runs steps as a Scene and waits for the Run to succeed.
func runScene(ctx context.Context, c client.Client, ns, name string, timeout time.Duration, steps ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Steps = steps
	must(c.Create(ctx, scene))
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: name}}}
	must(c.Create(ctx, run))
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		must(c.Get(ctx, client.ObjectKeyFromObject(run), run))
		if run.Status.Phase.Finished() {
			if run.Status.Phase != ergonv1alpha1.RunSucceeded {
				fail("Run %s %s: %+v", run.Name, run.Status.Phase, run.Status.Steps)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	fail("Run %s did not finish in %s", run.Name, timeout)
}

func waitPod(ctx context.Context, c client.Client, pod *corev1.Pod, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			return nil
		case corev1.PodFailed:
			return fmt.Errorf("pod %s failed: %s", pod.Name, pod.Status.Message)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("pod %s did not end in %s", pod.Name, timeout)
}

func podLog(ctx context.Context, cs *kubernetes.Clientset, ns, pod, container string) string {
	b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(b)
}

// managerPID finds the manager's process on this machine: the one whose command line names
// --artifact-store.
func managerPID() (int, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []int
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte("--artifact-store=")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		found = append(found, pid)
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("want one manager process with --artifact-store on this machine, found %v", found)
	}
	slices.Sort(found)
	return found[0], nil
}

// rss is a process's resident memory in bytes; 0 when it cannot be read.
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
