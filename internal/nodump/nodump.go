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

// Package nodump keeps a process's secrets from the other processes of its user. A step
// pod's processes all run as one user, so without it any command an agent's shell tool runs
// could read the model's API key from /proc/1/environ or /proc/PID/environ of the runtime.
// A process marked not dumpable has its /proc files owned by root and refuses ptrace to
// processes without CAP_SYS_PTRACE, which every step pod drops.
//
// The mark does not survive execve, so every process that holds a secret sets it first
// thing: the step entrypoint (PID 1) and the agent runtime. The commands the runtime starts
// get a clean environment and are dumpable: they hold nothing.
package nodump
