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
	"os"
	"os/signal"
	"syscall"
)

// workspaceRoot is where a Workspace's volume is mounted (internal/workspace.MountPath).
const workspaceRoot = "/workspace"

// idle waits for SIGTERM or SIGINT: the workspace pod's container runs nothing else, whatever
// its image, and people and steps reach its volume by exec or by their own pods. As PID 1 it
// must handle the signal itself, or the kubelet waits the whole grace period.
func idle() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
}
