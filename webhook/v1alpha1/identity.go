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

package v1alpha1

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// manager is the identity Ergon's manager acts as: only it may create Gates and set the
// annotations the engine relies on. The API server itself says who that is.
type manager struct {
	username string
}

// managerOf asks the API server who the manager's own credentials authenticate as, with a
// SelfSubjectReview (as `kubectl auth whoami` does): a ServiceAccount's
// system:serviceaccount:NAMESPACE:NAME in a cluster, whoever the kubeconfig names elsewhere.
// It is asked once per manager, when the first webhook is set up; the manager cannot start
// without an answer.
func managerOf(mgr ctrl.Manager) (manager, error) {
	identitiesMu.Lock()
	defer identitiesMu.Unlock()
	if m, ok := identities[mgr.GetConfig()]; ok {
		return m, nil
	}
	m, err := whoAmI(mgr.GetConfig())
	if err == nil {
		identities[mgr.GetConfig()] = m
	}
	return m, err
}

// identities keeps the answer for each manager's credentials: every webhook asks.
var (
	identitiesMu sync.Mutex
	identities   = map[*rest.Config]manager{}
)

func whoAmI(cfg *rest.Config) (manager, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return manager{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		review  *authenticationv1.SelfSubjectReview
		lastErr error
	)
	// The API server may be briefly unreachable while the manager starts; ask again for a minute.
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		review, lastErr = cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return lastErr == nil, nil
	})
	if err != nil {
		return manager{}, fmt.Errorf("asking the API server who the manager is (SelfSubjectReview): %w", cmpErr(lastErr, err))
	}
	if review.Status.UserInfo.Username == "" {
		return manager{}, fmt.Errorf("the API server's SelfSubjectReview named no user for the manager")
	}
	return manager{username: review.Status.UserInfo.Username}, nil
}

// cmpErr is the first error that is not nil.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// is reports whether the request comes from the manager.
func (m manager) is(req admission.Request) bool {
	return m.username != "" && req.UserInfo.Username == m.username
}
