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

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTriggerRunNames(t *testing.T) {
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	if got, want := ScheduledRunName("weekly", at), "weekly-"+strconv.FormatInt(at.Unix()/60, 10); got != want {
		t.Errorf("ScheduledRunName = %q, want %q", got, want)
	}
	if ScheduledRunName("weekly", at) != ScheduledRunName("weekly", at.Add(59*time.Second)) {
		t.Error("two times within one minute must name the same Run")
	}
	long := strings.Repeat("t", 80)
	for _, name := range []string{ScheduledRunName(long, at), DeliveryRunName(long, "d1"), ChainedRunName(long, "uid")} {
		if len(name) > MaxLabelLength {
			t.Errorf("%q is longer than %d", name, MaxLabelLength)
		}
	}
	if DeliveryRunName("hook", "a") == DeliveryRunName("hook", "b") {
		t.Error("two deliveries must name two Runs")
	}
	if ChainedRunName("chain", "uid-1") == ChainedRunName("chain", "uid-2") {
		t.Error("two source Runs must name two Runs")
	}
}
