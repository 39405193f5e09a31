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
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// warmPool makes a WorkspacePool of the shape of ws with replicas warm pods, and waits until
// they are all ready.
func warmPool(ctx context.Context, c client.Client, ws *ergonv1alpha1.Workspace, replicas int32, timeout time.Duration) error {
	pool := &ergonv1alpha1.WorkspacePool{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ws.Namespace},
		Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: replicas, Template: ergonv1alpha1.WorkspacePoolTemplate{
			Image: ws.Spec.Image, Resources: ws.Spec.Resources, Storage: ws.Spec.Storage,
			RuntimeClassName: ws.Spec.RuntimeClassName, Env: ws.Spec.Env}}}
	start := time.Now()
	if err := c.Create(ctx, pool); err != nil {
		return err
	}
	for deadline := start.Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if pool.Status.Ready == replicas {
			fmt.Printf("WorkspacePool: %d warm pods ready in %s\n", replicas, time.Since(start).Round(time.Second))
			return nil
		}
	}
	return fmt.Errorf("WorkspacePool: %d of %d warm pods ready after %s: %v", pool.Status.Ready, replicas, timeout, pool.Status.Conditions)
}

// tookWarm counts the Workspaces of the namespace running on a warm pod they took.
func tookWarm(ctx context.Context, c client.Client, ns string) int {
	list := &ergonv1alpha1.WorkspaceList{}
	must(c.List(ctx, list, client.InNamespace(ns)))
	n := 0
	for _, ws := range list.Items {
		if strings.HasPrefix(ws.Status.PodName, "ergon-wp-") {
			n++
		}
	}
	return n
}
