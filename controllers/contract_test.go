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
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// What the specs hold the Run controller to, spelled out here rather than imported from it: the
// names of a step pod's parts, of the ConfigMaps of a step's internal state, and of its Events.
// A manager of the next version reads what this one wrote (pods, ConfigMaps) and people and
// scripts read its Events, so a rename of any of them must fail a spec, not pass unnoticed.
const (
	// Step pods.
	initContainer         = "ergon-init"
	entrypointPath        = stepcontract.BinDir + "/entrypoint"
	agentPath             = stepcontract.BinDir + "/agent"
	annotationInputPrefix = "inputs.ergon.dev/"
	annotationAgentSpec   = "agent.ergon.dev/spec"
	annotationToolCall    = ergonv1alpha1.AnnotationToolCall
	workspaceVolume       = workspace.VolumeName
	stepUID               = 65532

	// A step's internal state, by ConfigMap key.
	checkpointKey  = "checkpoint"
	toolResultsKey = "tool-results"

	// An agent's memory store: its label, its key and how the agent pod mounts it.
	labelMemory = ergonv1alpha1.AnnotationPrefix + "memory"
	memoryKey   = "memory"
	memoryDir   = "/ergon/memory"
	memoryFile  = "memory.json"

	// Events.
	reasonNotificationFailed = "NotificationFailed"
)

// counter is the value of the manager's counter name for the labels given, as /metrics
// exposes it: 0 when it has no such series.
func counter(g Gomega, name string, labels map[string]string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m.GetLabel(), labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matches(pairs []*dto.LabelPair, want map[string]string) bool {
	if len(pairs) != len(want) {
		return false
	}
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; !ok || v != p.GetValue() {
			return false
		}
	}
	return true
}
