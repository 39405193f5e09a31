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
	"flag"
	"fmt"

	runcontroller "github.com/ergon-dev/ergon/controllers/run"
)

// stepResourceOptions are the --step-default-* flags: the requests and limits of step pods
// whose step and Scene set none, where the namespace's LimitRanges give none (docs/limits.md).
type stepResourceOptions struct {
	cpuRequest, memoryRequest, cpuLimit, memoryLimit string
}

func (s *stepResourceOptions) bindFlags() {
	const where = "of a container step's (or tool call's) pod whose step and Scene set no resources, " +
		"in a namespace whose LimitRanges give containers no defaults; empty sets none."
	flag.StringVar(&s.cpuRequest, "step-default-cpu-request", "50m", "The CPU request "+where)
	flag.StringVar(&s.memoryRequest, "step-default-memory-request", "64Mi", "The memory request "+where)
	flag.StringVar(&s.cpuLimit, "step-default-cpu-limit", "", "The CPU limit "+where)
	flag.StringVar(&s.memoryLimit, "step-default-memory-limit", "512Mi", "The memory limit "+where)
}

// apply sets the run engine's default step resources from the flags.
func (s *stepResourceOptions) apply(run *runcontroller.RunConfig) error {
	r, err := runcontroller.StepDefaultResources(s.cpuRequest, s.memoryRequest, s.cpuLimit, s.memoryLimit)
	if err != nil {
		return fmt.Errorf("--step-default-*: %w", err)
	}
	for name, request := range r.Requests {
		if limit, ok := r.Limits[name]; ok && request.Cmp(limit) > 0 {
			return fmt.Errorf("--step-default-%s-request (%s) must not be more than --step-default-%s-limit (%s)",
				name, request.String(), name, limit.String())
		}
	}
	run.StepDefaultResources = r
	return nil
}
