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

package naming

import "strconv"

// A unit is one run of a fan-out or looping step: instance index (from 0, -1 when the step
// does not fan out) and iteration (from 1, 0 when it does not loop). Its readable name is
// <step>-<index>, <step>-i<iteration> or <step>-<index>-i<iteration>.

// UnitName is the readable name of a unit, as status and pod names show it.
func UnitName(step string, index, iteration int32) string {
	name := step
	if index >= 0 {
		name += "-" + strconv.Itoa(int(index))
	}
	if iteration > 0 {
		name += "-i" + strconv.Itoa(int(iteration))
	}
	return name
}

func unitIdentity(run, step string, index, iteration int32) []string {
	return []string{run, step, strconv.Itoa(int(index)), strconv.Itoa(int(iteration))}
}

// UnitPodName names the pod of one attempt of a unit: <run>-<step>-<index>[-i<iteration>]-<attempt>-<hash>.
func UnitPodName(run, step string, index, iteration, attempt int32) string {
	a := strconv.Itoa(int(attempt))
	return unique(MaxLabelLength, []string{run, UnitName(step, index, iteration), a}, "unit-pod",
		append(unitIdentity(run, step, index, iteration), a)...)
}

// UnitChildRunName names the child Run of a unit of a scene step.
func UnitChildRunName(run, step string, index, iteration int32) string {
	return unique(MaxLabelLength, []string{run, UnitName(step, index, iteration)}, "unit-child",
		unitIdentity(run, step, index, iteration)...)
}

// UnitOutputConfigMapName names the ConfigMap that keeps a unit's whole output.
func UnitOutputConfigMapName(run, step string, index, iteration int32) string {
	return unique(MaxSubdomainLength, []string{run, UnitName(step, index, iteration), "output"}, "unit-output",
		unitIdentity(run, step, index, iteration)...)
}
