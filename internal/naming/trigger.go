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
	"time"
)

// ScheduledRunName names the Run a schedule Trigger starts for a scheduled time:
// <trigger>-<unix minutes>, as a CronJob names its Jobs. Every manager, replica and retry
// that starts the same time computes the same name, so only one can create it.
func ScheduledRunName(trigger string, scheduled time.Time) string {
	return Join(MaxLabelLength, trigger, strconv.FormatInt(scheduled.Unix()/60, 10))
}

// DeliveryRunName names the Run a webhook delivery starts: <trigger>-<hash of the delivery
// key>, so a retried delivery finds the Run the first one created.
func DeliveryRunName(trigger, delivery string) string {
	return Join(MaxLabelLength, trigger, Hash("delivery", delivery))
}

// ChainedRunName names the Run a runCompleted Trigger starts for a finished Run:
// <trigger>-<hash of the source Run's UID>, once per source Run.
func ChainedRunName(trigger, sourceUID string) string {
	return Join(MaxLabelLength, trigger, Hash("run", sourceUID))
}
