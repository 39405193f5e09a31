//go:build e2e && chaos

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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
	"github.com/ergon-dev/ergon/internal/naming"
)

// The chaos suite's witnesses: what it saw happen, recorded outside Ergon, to hold Ergon's
// status against at the end.

// podRecord is one pod name as the ledger saw it.
type podRecord struct {
	uids          map[types.UID]bool
	run, step     string
	attempt       string
	everRunning   bool
	terminalPhase corev1.PodPhase
}

// podLedger records every pod of a namespace, from a list and a watch resumed at the last
// resourceVersion whenever the API server drops it, so that no pod created and deleted while
// the watch was being re-established goes unseen. gaps counts re-lists after an expired
// resourceVersion, after which pods that lived only in between could be missing.
type podLedger struct {
	mu   sync.Mutex
	pods map[string]*podRecord
	gaps int
}

func (l *podLedger) see(pod *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.pods[pod.Name]
	if r == nil {
		r = &podRecord{uids: map[types.UID]bool{}, run: pod.Labels[ergonv1alpha1.LabelRun],
			step: pod.Labels[ergonv1alpha1.LabelStep], attempt: pod.Labels[ergonv1alpha1.LabelAttempt]}
		l.pods[pod.Name] = r
	}
	r.uids[pod.UID] = true
	if pod.Status.Phase == corev1.PodRunning {
		r.everRunning = true
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		r.terminalPhase = pod.Status.Phase
	}
}

func watchPodLedger(ctx context.Context, ns string) *podLedger {
	l := &podLedger{pods: map[string]*podRecord{}}
	go func() {
		defer GinkgoRecover()
		rv := ""
		for ctx.Err() == nil {
			if rv == "" {
				list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					time.Sleep(500 * time.Millisecond)
					continue
				}
				for i := range list.Items {
					l.see(&list.Items[i])
				}
				rv = list.ResourceVersion
			}
			w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					l.mu.Lock()
					l.gaps++
					l.mu.Unlock()
					rv = ""
				}
				time.Sleep(500 * time.Millisecond)
				continue
			}
			for e := range w.ResultChan() {
				if e.Type == watch.Error {
					if status, ok := e.Object.(*metav1.Status); ok && status.Code == http.StatusGone {
						l.mu.Lock()
						l.gaps++
						l.mu.Unlock()
						rv = ""
					}
					break
				}
				if pod, ok := e.Object.(*corev1.Pod); ok {
					rv = pod.ResourceVersion
					if e.Type != watch.Bookmark {
						l.see(pod)
					}
				}
			}
			w.Stop()
		}
	}()
	return l
}

// reused lists pod names that had more than one pod: the same attempt ran twice.
func (l *podLedger) reused() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for name, r := range l.pods {
		if len(r.uids) > 1 {
			out[name] = len(r.uids)
		}
	}
	return out
}

// attempts returns, per "run/step", the attempt numbers that had a pod.
func (l *podLedger) attempts() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for _, r := range l.pods {
		if r.run != "" && r.step != "" {
			out[r.run+"/"+r.step] = append(out[r.run+"/"+r.step], r.attempt)
		}
	}
	return out
}

// gateApprover decides the Gates of the first `released` Runs, as the suite releases them,
// and counts the decisions it made per Gate. A decision whose answer was lost (the API server
// died mid-request) is looked up again before it is sent again: at most one is accepted.
type gateApprover struct {
	mu       sync.Mutex
	released int
	decided  map[string]int
}

func approveReleasedGates(ctx context.Context, ns string, runs []string) *gateApprover {
	a := &gateApprover{decided: map[string]int{}}
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			a.mu.Lock()
			released := a.released
			a.mu.Unlock()
			for _, run := range runs[:released] {
				gate := &ergonv1alpha1.Gate{}
				key := client.ObjectKey{Namespace: ns, Name: naming.GateName(run, "review")}
				if k8sClient.Get(ctx, key, gate) != nil || gate.Spec.Decision != nil {
					continue
				}
				patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"decision":{"option":"approve"}}}`))
				if k8sClient.Patch(ctx, gate, patch) == nil {
					a.mu.Lock()
					a.decided[gate.Name]++
					a.mu.Unlock()
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	return a
}

func (a *gateApprover) release(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released = max(a.released, n)
}

// hookSender is a webhook sender as GitHub is one: it sends a new signed delivery every
// interval and retries each one, signed again, until it is accepted (HTTP 202), as long as
// the manager or the API server is down. accepted maps each delivery id to the Run the
// answer named; tries counts the requests sent.
type hookSender struct {
	mu       sync.Mutex
	accepted map[string]string
	failed   map[string]string
	tries    int
	sent     int
	wg       sync.WaitGroup
}

func sendHooks(ctx SpecContext, stop context.Context, path string, key []byte, every time.Duration) *hookSender {
	s := &hookSender{accepted: map[string]string{}, failed: map[string]string{}}
	s.wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer s.wg.Done()
		for n := 0; stop.Err() == nil; n++ {
			id := fmt.Sprintf("chaos-%03d", n)
			s.mu.Lock()
			s.sent++
			s.mu.Unlock()
			s.wg.Add(1)
			go s.deliver(ctx, path, key, id)
			select {
			case <-stop.Done():
			case <-time.After(every):
			}
		}
	}()
	return s
}

func (s *hookSender) deliver(ctx SpecContext, path string, key []byte, id string) {
	defer GinkgoRecover()
	defer s.wg.Done()
	body := []byte(`{"delivery":"` + id + `"}`)
	deadline := time.Now().Add(4 * time.Minute)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		status, answer, err := deliverHook(ctx, path, map[string]string{
			hooks.HeaderSignature: hooks.Sign(key, ts, id, body),
			hooks.HeaderTimestamp: ts,
			hooks.HeaderDelivery:  id,
		}, body)
		s.mu.Lock()
		s.tries++
		if err == nil && status == http.StatusAccepted {
			s.accepted[id] = answer["run"]
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		last = fmt.Sprintf("HTTP %d %v %v", status, answer, err)
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	s.failed[id] = last
	s.mu.Unlock()
}
