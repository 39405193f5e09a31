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

package archiveapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A name that is not one Kubernetes allows never becomes a path: "..", slashes and the like
// would walk out of the archive's API, with the reader's credentials, to another.
func TestReadsRefuseNamesThatWouldWalkElsewhere(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc := cs.CoreV1().RESTClient()
	ctx := context.Background()
	for _, c := range []struct{ ns, name string }{
		{"team-a", "../../../../api/v1/namespaces/team-a/secrets/token"},
		{"team-a", "a/b"},
		{"..", "run"},
		{"team-a/../kube-system", "run"},
		{"team-a", ""},
	} {
		_, err := Get(ctx, rc, c.ns, c.name, "")
		if err == nil || !strings.Contains(err.Error(), "namespace") && !strings.Contains(err.Error(), "run name") {
			t.Errorf("Get(%q, %q) = %v, want a refusal naming the field", c.ns, c.name, err)
		}
	}
	if _, err := List(ctx, rc, "../x", url.Values{}); err == nil {
		t.Error("List of a namespace that is not a name was sent")
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
	if _, err := Get(ctx, rc, "team-a", "report-1", ""); err == nil || asked.Load() != 1 {
		t.Errorf("a valid name was not asked: %v, %d", err, asked.Load())
	}
}
