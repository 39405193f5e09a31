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

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// An engine runs a workload in a namespace and says when it has finished.
type engine interface {
	name() string
	// prepare makes what the workload needs before the clock starts (a Scene, RBAC).
	prepare(ctx context.Context, ns string, w workload) error
	// submit starts every group of the workload.
	submit(ctx context.Context, ns string, w workload, rec *recorder) error
	// finished reports whether every group succeeded; an error says one failed.
	finished(ctx context.Context, ns string, w workload) (bool, error)
	// key names the group and step a pod runs.
	key(pod *corev1.Pod) (group, step string, ok bool)
}

func groupName(i int) string { return fmt.Sprintf("g%03d", i) }

func runtimeToUnstructured(v any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// phases lists the status.phase of the objects of a resource in ns.
func phases(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) ([]string, error) {
	lister, err := watchPhases(ctx, dyn, gvr, ns)
	if err != nil {
		return nil, err
	}
	objs, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, obj := range objs {
		o := obj.(*unstructured.Unstructured)
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		out = append(out, o.GetName()+"="+p)
	}
	return out, nil
}

// watchers are the informers phases reads, one per resource and namespace, each stopped with
// the context of the workload that started it.
var watchers sync.Map // gvr/namespace -> cache.GenericNamespaceLister

// watchPhases returns a lister of gvr in ns that one watch keeps current. A watch, not a List
// every poll: polling would charge the engine's row the harness's own requests (four Lists
// of every Run or Workflow a second), which bare pods do not pay.
func watchPhases(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) (cache.GenericNamespaceLister, error) {
	key := gvr.String() + "/" + ns
	if l, ok := watchers.Load(key); ok {
		return l.(cache.GenericNamespaceLister), nil
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	informer := factory.ForResource(gvr)
	informer.Informer() // registers it before Start
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return nil, fmt.Errorf("watching %s in %s: %w", gvr.Resource, ns, ctx.Err())
	}
	l := informer.Lister().ByNamespace(ns)
	watchers.Store(key, l)
	// A later run may draw the same namespace name: it must not read this stopped watch.
	context.AfterFunc(ctx, func() { watchers.Delete(key) })
	return l, nil
}

// allPhase reports whether n objects are all in phase ok, and fails when one is in a phase of bad.
func allPhase(list []string, n int, ok string, bad ...string) (bool, error) {
	done := 0
	for _, np := range list {
		_, p, _ := strings.Cut(np, "=")
		if slices.Contains(bad, p) {
			return false, fmt.Errorf("%s", np)
		}
		if p == ok {
			done++
		}
	}
	return done == n, nil
}

// ergon runs a workload as one Scene and a Run per group.
type ergon struct {
	dyn   dynamic.Interface
	image string
}

var (
	sceneGVR = schema.GroupVersionResource{Group: "ergon.dev", Version: "v1alpha1", Resource: "scenes"}
	runGVR   = schema.GroupVersionResource{Group: "ergon.dev", Version: "v1alpha1", Resource: "runs"}
)

func (ergon) name() string { return "ergon" }

func (e ergon) prepare(ctx context.Context, ns string, w workload) error {
	var steps []any
	for _, s := range w.steps {
		script := s.script()
		if s.output && len(s.deps) > 0 {
			script = fmt.Sprintf(`set -- "$(cat "$ERGON_INPUTS/%s")"; %s`, s.deps[0], script)
		}
		steps = append(steps, map[string]any{"name": s.name, "dependsOn": toAny(s.deps),
			"container": map[string]any{"image": e.image, "command": []any{"sh", "-c", script}}})
	}
	scene := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ergon.dev/v1alpha1", "kind": "Scene",
		"metadata": map[string]any{"name": "w", "namespace": ns}, "spec": map[string]any{"steps": steps}}}
	_, err := e.dyn.Resource(sceneGVR).Namespace(ns).Create(ctx, scene, metav1.CreateOptions{})
	return err
}

func (e ergon) submit(ctx context.Context, ns string, w workload, _ *recorder) error {
	return forGroups(w.groups, func(i int) error {
		run := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ergon.dev/v1alpha1", "kind": "Run",
			"metadata": map[string]any{"name": groupName(i), "namespace": ns},
			"spec":     map[string]any{"sceneRef": map[string]any{"name": "w"}}}}
		_, err := e.dyn.Resource(runGVR).Namespace(ns).Create(ctx, run, metav1.CreateOptions{})
		return err
	})
}

func (e ergon) finished(ctx context.Context, ns string, w workload) (bool, error) {
	list, err := phases(ctx, e.dyn, runGVR, ns)
	if err != nil {
		return false, err
	}
	return allPhase(list, w.groups, "Succeeded", "Failed")
}

func (ergon) key(pod *corev1.Pod) (string, string, bool) {
	g, s := pod.Labels["ergon.dev/run"], pod.Labels["ergon.dev/step"]
	return g, s, g != "" && s != ""
}

// argo runs a workload as one DAG Workflow per group, under the emissary executor.
type argo struct {
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	image string
}

var workflowGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}

func (argo) name() string { return "argo" }

// prepare binds the emissary executor's Role (manifests/quick-start/base/executor) to the
// namespace's default ServiceAccount, which the Workflows' pods run as.
func (a argo) prepare(ctx context.Context, ns string, _ workload) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "executor", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"},
			Verbs: []string{"create", "patch"}}}}
	if _, err := a.cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "executor-default", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "executor"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}}
	_, err := a.cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	return err
}

// argoMaxTasks is the most tasks Argo's CRD admits in one DAG template.
const argoMaxTasks = 200

func (a argo) workflow(ns, name string, w workload) map[string]any {
	sec := toMap(restrictedContainer())
	out := step{output: true}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"entrypoint":      "main",
			"securityContext": toMap(restrictedPod()),
			"volumes":         []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
			"templates": []any{
				map[string]any{"name": "main", "dag": map[string]any{"tasks": argoTasks(w)}},
				map[string]any{"name": "true", "container": map[string]any{
					"image": a.image, "command": []any{"true"}, "securityContext": sec}},
				map[string]any{"name": "output",
					"inputs":  map[string]any{"parameters": []any{map[string]any{"name": "in"}}},
					"outputs": map[string]any{"parameters": []any{map[string]any{"name": "out", "valueFrom": map[string]any{"path": "/tmp/out"}}}},
					"container": map[string]any{"image": a.image, "securityContext": sec,
						"command":      []any{"sh", "-c", out.script() + " > /tmp/out", "sh", "{{inputs.parameters.in}}"},
						"volumeMounts": []any{map[string]any{"name": "tmp", "mountPath": "/tmp"}}}},
			},
		},
	}
}

// argoTasks is the workload's DAG, a task per step; a fan-out wider than Argo admits is written
// as Argo's users write one: a task looped over a sequence, its items named as the steps are
// (each pod's node is "<workflow>.s(<i>:s<i>)").
func argoTasks(w workload) []any {
	if w.independent() && len(w.steps) > argoMaxTasks {
		return []any{map[string]any{"name": "s", "template": "true",
			"withSequence": map[string]any{"count": fmt.Sprint(len(w.steps)), "format": "s%03d"}}}
	}
	var tasks []any
	for _, s := range w.steps {
		task := map[string]any{"name": s.name, "template": "true"}
		if len(s.deps) > 0 {
			task["dependencies"] = toAny(s.deps)
		}
		if s.output {
			task["template"] = "output"
			in := ""
			if len(s.deps) > 0 {
				in = fmt.Sprintf("{{tasks.%s.outputs.parameters.out}}", s.deps[0])
			}
			task["arguments"] = map[string]any{"parameters": []any{map[string]any{"name": "in", "value": in}}}
		}
		tasks = append(tasks, task)
	}
	return tasks
}

func (a argo) submit(ctx context.Context, ns string, w workload, _ *recorder) error {
	return forGroups(w.groups, func(i int) error {
		wf := &unstructured.Unstructured{Object: a.workflow(ns, groupName(i), w)}
		_, err := a.dyn.Resource(workflowGVR).Namespace(ns).Create(ctx, wf, metav1.CreateOptions{})
		return err
	})
}

func (a argo) finished(ctx context.Context, ns string, w workload) (bool, error) {
	list, err := phases(ctx, a.dyn, workflowGVR, ns)
	if err != nil {
		return false, err
	}
	return allPhase(list, w.groups, "Succeeded", "Failed", "Error")
}

func (argo) key(pod *corev1.Pod) (string, string, bool) {
	g := pod.Labels["workflows.argoproj.io/workflow"]
	node := pod.Annotations["workflows.argoproj.io/node-name"]
	i := strings.LastIndex(node, ".")
	step := node[i+1:]
	if j := strings.LastIndex(step, ":"); j > 0 && strings.HasSuffix(step, ")") {
		step = step[j+1 : len(step)-1] // an item of a looped task: s(3:s003)
	}
	return g, step, g != "" && i > 0
}

// bare runs the workload's pods directly: the harness itself starts each pod the moment it sees
// its dependencies succeed, as a controller with no overhead would. Its shape decides how
// much of an Ergon step pod each pod carries, so that Ergon's gap to bare pods splits into
// what the pod costs the node and what the controller costs (engines bare, bare-volumes,
// bare-image, bare-ergon).
type bare struct {
	cs     kubernetes.Interface
	image  string
	engine string // its name in -engines: bare, or bare-<shape>
	shape  bareShape
	// ergonImage is the image Ergon's binaries come from, for the image and ergon shapes.
	ergonImage string
}

// bareShape is how much of an Ergon step pod a bare pod carries.
type bareShape struct {
	hardened   bool // fsGroup, runAsGroup, a read-only root, no service links
	emptyDirs  int  // 1: an emptyDir at /tmp; 2: Ergon's two sized emptyDirs (its output and /tmp)
	image      bool // Ergon's binaries as an image volume
	entrypoint bool // the step run under Ergon's entrypoint, with its environment
}

// bareShapes are the bare engines. bare-volumes, bare-image and bare-ergon each add to the one
// before, up to an Ergon step pod; bare-hardened and bare-emptydir split bare-volumes in two.
var bareShapes = map[string]bareShape{
	"bare":          {},
	"bare-hardened": {hardened: true},
	"bare-emptydir": {emptyDirs: 1},
	"bare-volumes":  {hardened: true, emptyDirs: 2},
	"bare-image":    {hardened: true, emptyDirs: 2, image: true},
	"bare-ergon":    {hardened: true, emptyDirs: 2, image: true, entrypoint: true},
}

func (b bare) name() string { return b.engine }

func (bare) prepare(context.Context, string, workload) error { return nil }

// pod is the step's pod. The shapes past plain follow the step pods Ergon's planner makes
// (internal/planner): the same volumes, mounts and entrypoint, written out here because this
// module does not import Ergon's.
func (b bare) pod(ns, group string, s step) *corev1.Pod {
	c := corev1.Container{Name: "main", Image: b.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", s.script(), "sh", ""}, SecurityContext: restrictedContainer()}
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, SecurityContext: restrictedPod(),
		AutomountServiceAccountToken: new(false)}
	if b.shape.hardened {
		spec.SecurityContext.FSGroup = new(int64(65532))
		spec.SecurityContext.RunAsGroup = new(int64(65532))
		spec.EnableServiceLinks = new(false)
		c.SecurityContext.ReadOnlyRootFilesystem = new(true)
	}
	sized := func(name, size string) corev1.Volume {
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if size != "" {
			v.EmptyDir.SizeLimit = new(resource.MustParse(size))
		}
		return v
	}
	switch b.shape.emptyDirs {
	case 1:
		spec.Volumes = append(spec.Volumes, sized("tmp", ""))
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	case 2:
		spec.Volumes = append(spec.Volumes, sized("ergon-output", "8Mi"), sized("tmp", "256Mi"))
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ergon-output", MountPath: "/ergon/output"},
			corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	}
	if b.shape.image {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "ergon-bin", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: b.ergonImage, PullPolicy: corev1.PullIfNotPresent}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ergon-bin", MountPath: "/ergon/bin", ReadOnly: true})
	}
	if b.shape.entrypoint {
		c.Args = append([]string{"run", "--"}, c.Command...)
		c.Command = []string{"/ergon/bin/ergon-entrypoint"}
		c.Env = []corev1.EnvVar{{Name: "ERGON_OUTPUT", Value: "/ergon/output/value"}, {Name: "ERGON_RUN", Value: group},
			{Name: "ERGON_STEP", Value: s.name}, {Name: "ERGON_ATTEMPT", Value: "1"}}
	}
	spec.Containers = []corev1.Container{c}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: group + "-" + s.name, Namespace: ns,
			Labels: map[string]string{"compare.ergon.dev/group": group, "compare.ergon.dev/step": s.name}},
		Spec: spec,
	}
}

func (b bare) submit(ctx context.Context, ns string, w workload, rec *recorder) error {
	var mu sync.Mutex
	started := map[string]bool{}
	start := func(group string, s step) {
		mu.Lock()
		if started[group+"/"+s.name] {
			mu.Unlock()
			return
		}
		started[group+"/"+s.name] = true
		mu.Unlock()
		if _, err := b.cs.CoreV1().Pods(ns).Create(ctx, b.pod(ns, group, s), metav1.CreateOptions{}); err != nil {
			rec.fail(fmt.Errorf("creating pod %s-%s: %w", group, s.name, err))
		}
	}
	rec.setOnDone(func(group, _ string) {
		for _, s := range w.steps {
			ready := len(s.deps) > 0
			for _, d := range s.deps {
				ready = ready && rec.isDone(group, d)
			}
			if ready {
				go start(group, s)
			}
		}
	})
	return forGroups(w.groups, func(i int) error {
		for _, s := range w.steps {
			if len(s.deps) == 0 {
				start(groupName(i), s)
			}
		}
		return nil
	})
}

func (b bare) finished(_ context.Context, _ string, w workload) (bool, error) { return false, nil }

func (bare) key(pod *corev1.Pod) (string, string, bool) {
	g, s := pod.Labels["compare.ergon.dev/group"], pod.Labels["compare.ergon.dev/step"]
	return g, s, g != "" && s != ""
}

// forGroups calls create for each group, 8 at a time, and returns the first error.
func forGroups(n int, create func(int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := create(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
