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

// Package browse reads a Workspace's files for people, through the API server with the
// caller's own identity, so Kubernetes RBAC decides who may: it runs the read-only `files`
// command of Ergon's entrypoint in the workspace pod by `pods/exec`. Exec goes from the API
// server to the kubelet, not over the pod network, so the Workspace's NetworkPolicy, which
// denies all ingress, does not stand in the way. The kubectl plugin's files command uses it;
// docs/workspaces.md describes the design and the RBAC it needs.
package browse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // client-go's executor fallback still takes this package's types
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/workspace"
	"github.com/ergon-dev/ergon/internal/workspace/files"
)

// ErrNotRunning is the error for a Workspace whose pod does not run, such as an Idle one,
// when the Client may not wake it.
var ErrNotRunning = errors.New("the Workspace's pod is not running")

// Client reads Workspaces' files as the identity of its rest.Config.
type Client struct {
	config    *rest.Config
	clientset kubernetes.Interface
	client    client.Client
	// Wake, when set, starts an Idle Workspace (by touching it, which needs `patch` on
	// workspaces) and waits up to this long for its pod; zero fails with ErrNotRunning.
	Wake time.Duration
}

// New makes a Client for a caller's rest.Config.
func New(config *rest.Config) (*Client, error) {
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ergonv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Client{config: config, clientset: clientset, client: c}, nil
}

// List lists a directory of a Workspace, path relative to /workspace.
func (c *Client) List(ctx context.Context, namespace, name, path string) ([]files.Entry, error) {
	var out bytes.Buffer
	if err := c.run(ctx, namespace, name, []string{"ls", path}, &out); err != nil {
		return nil, err
	}
	var entries []files.Entry
	scanner := bufio.NewScanner(&out)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		var e files.Entry
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading the listing of %s: %w", path, err)
		}
		entries = append(entries, e)
	}
	return entries, scanner.Err()
}

// Read writes a file of a Workspace, path relative to /workspace, to w.
func (c *Client) Read(ctx context.Context, namespace, name, path string, w io.Writer) error {
	return c.run(ctx, namespace, name, []string{"cat", path}, w)
}

// run runs `entrypoint files ARGS` in the Workspace's pod.
func (c *Client) run(ctx context.Context, namespace, name string, args []string, stdout io.Writer) error {
	pod, err := c.runningPod(ctx, namespace, name)
	if err != nil {
		return err
	}
	req := c.clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: workspace.Container, Stdout: true, Stderr: true,
			Command: append([]string{workspace.EntrypointCommand[0], "files"}, args...)}, clientgoscheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		return err
	}
	websocket, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: &stderr})
	if msg := strings.TrimSpace(stderr.String()); err != nil && msg != "" {
		return fmt.Errorf("%s: %s", strings.Join(args, " "), msg)
	}
	return err
}

// runningPod is the name of the Workspace's running pod; an Idle Workspace is woken first
// when the Client may.
func (c *Client) runningPod(ctx context.Context, namespace, name string) (string, error) {
	ws := &ergonv1alpha1.Workspace{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if err := c.client.Get(ctx, key, ws); err != nil {
		return "", err
	}
	if ws.Status.Phase == ergonv1alpha1.WorkspaceRunning && ws.Status.PodName != "" {
		return ws.Status.PodName, nil
	}
	if c.Wake == 0 {
		return "", fmt.Errorf("workspace %s is %s: %w", name, phaseOf(ws), ErrNotRunning)
	}
	if err := Touch(ctx, c.client, ws, time.Now()); err != nil {
		return "", err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, c.Wake, true, func(ctx context.Context) (bool, error) {
		if err := c.client.Get(ctx, key, ws); err != nil {
			return false, err
		}
		return ws.Status.Phase == ergonv1alpha1.WorkspaceRunning && ws.Status.PodName != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("workspace %s did not start in %s (it is %s): %w", name, c.Wake, phaseOf(ws), err)
	}
	return ws.Status.PodName, nil
}

func phaseOf(ws *ergonv1alpha1.Workspace) string {
	if ws.Status.Phase == "" {
		return "not started yet"
	}
	return string(ws.Status.Phase)
}

// Touch records use of a Workspace now (the annotation ergon.dev/touch), which starts an
// Idle one and keeps a running one up for another idleTimeout.
func Touch(ctx context.Context, c client.Client, ws *ergonv1alpha1.Workspace, now time.Time) error {
	patch := client.MergeFrom(ws.DeepCopy())
	if ws.Annotations == nil {
		ws.Annotations = map[string]string{}
	}
	ws.Annotations[ergonv1alpha1.AnnotationWorkspaceTouch] = now.UTC().Format(time.RFC3339)
	return c.Patch(ctx, ws, patch)
}
