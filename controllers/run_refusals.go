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

package controllers

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// refusals remembers, per Run, the children the API server refused to create (a pod that is
// invalid or forbidden by a ResourceQuota, a LimitRange, Pod Security or an admission policy;
// a child Run its webhook refuses) and why. act writes the status of the pass anyway, so the
// rest of the Run goes on; the next pass finds the child missing and, instead of taking it as
// deleted, fails its attempt with the API server's message (gather). Without this a refused
// child stopped the Run's every status write and left it stuck. The memory is the manager's:
// after a restart in between, the missing child counts as deleted, and its step's retry
// policy applies all the same.
type refusals struct {
	mu    sync.Mutex
	byRun map[string]map[string]string // namespace/name of the Run -> child's name -> message
}

// refused reports whether err is the API server refusing an object for good: invalid, or
// forbidden by a policy. Anything else (a timeout, a conflict) is retried.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
}

// add remembers that the Run's child name was refused with err.
func (r *refusals) add(run, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byRun == nil {
		r.byRun = map[string]map[string]string{}
	}
	if r.byRun[run] == nil {
		r.byRun[run] = map[string]string{}
	}
	r.byRun[run][name] = err.Error()
}

// get returns why the Run's child name was refused, if it was.
func (r *refusals) get(run, name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg, ok := r.byRun[run][name]
	return msg, ok
}

// forget drops what is remembered of a Run that finished or is gone.
func (r *refusals) forget(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byRun, run)
}
