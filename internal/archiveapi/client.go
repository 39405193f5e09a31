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
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// The client side of the API: the kubectl plugin and the console read the archive through
// the API server with their user's own credentials, by these functions.

// Path is the path of the archived Runs of a namespace, or of every namespace when it is
// empty.
func Path(namespace string) string {
	p := "/apis/" + Group + "/" + Version
	if namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	return p + "/" + Resource
}

// Read sends a read and returns its body; a refusal is returned as the API server's Status
// says it (client-go reads a JSON Status of a path outside its own groups as "unknown").
func Read(ctx context.Context, req *rest.Request) ([]byte, error) {
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		status := &metav1.Status{}
		if json.Unmarshal(raw, status) == nil && status.Kind == "Status" && status.Message != "" {
			return nil, &apierrors.StatusError{ErrStatus: *status}
		}
		return nil, err
	}
	return raw, nil
}

// Get reads the newest archived Run of a name in a namespace, or the one uid names, with its
// record. rc is a client of the core group (its decoder reads a refusal's Status).
func Get(ctx context.Context, rc rest.Interface, namespace, name, uid string) (*ArchivedRun, error) {
	// The names become the path: only names Kubernetes allows, so none walks elsewhere.
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("run name %q: %s", name, strings.Join(errs, "; "))
	}
	req := rc.Get().AbsPath(Path(namespace), name)
	if uid != "" {
		req = req.Param("uid", uid)
	}
	raw, err := Read(ctx, req)
	if err != nil {
		return nil, err
	}
	item := &ArchivedRun{}
	if err := json.Unmarshal(raw, item); err != nil {
		return nil, fmt.Errorf("reading the archive's answer: %w", err)
	}
	if item.Record == nil {
		return nil, fmt.Errorf("the archive returned no record of Run %s", name)
	}
	item.Record.Run.Namespace = namespace
	return item, nil
}

// List reads a page of archived Runs of a namespace, or of every namespace the user may read
// when it is empty, with the filters params names (see queryOf).
func List(ctx context.Context, rc rest.Interface, namespace string, params url.Values) (*ArchivedRunList, error) {
	if errs := validation.IsDNS1123Label(namespace); namespace != "" && len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	req := rc.Get().AbsPath(Path(namespace))
	for k, vs := range params {
		for _, v := range vs {
			if v != "" {
				req = req.Param(k, v)
			}
		}
	}
	raw, err := Read(ctx, req)
	if err != nil {
		return nil, err
	}
	list := &ArchivedRunList{}
	if err := json.Unmarshal(raw, list); err != nil {
		return nil, fmt.Errorf("reading the archive's answer: %w", err)
	}
	return list, nil
}

// Unreachable reports whether a failed read means the archive's API is not installed or not
// answering, rather than a refusal or a Run it does not hold: a 404 that does not come from
// the archive itself means the API server does not know the API.
func Unreachable(err error) bool {
	return apierrors.IsServiceUnavailable(err) || apierrors.IsUnauthorized(err) ||
		(apierrors.IsNotFound(err) && !strings.Contains(err.Error(), Resource))
}
