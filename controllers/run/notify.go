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

package run

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/humaninput"
	"github.com/ergon-dev/ergon/internal/notify"
)

// Notifier sends the notifications of Scenes that ask for them (spec.notify) to the channels
// the cluster's admin defined: internal/notify.Notifier.
type Notifier interface {
	Send(channel string, m notify.Message) error
	Link(namespace, run string) string
}

// reasonNotificationFailed is the Warning Event of a notification that was not sent.
const reasonNotificationFailed = "NotificationFailed"

// notifyGate queues the notification that a Gate the Run made now waits for a person. What
// cannot be queued is said in a Warning Event on the Run, naming the field; what the receiver
// never took, the notifier's outcome says (NotifyOutcome).
func (a *runActor) notifyGate(run *ergonv1alpha1.Run, gate *ergonv1alpha1.Gate, channel string) {
	if a.Notifier == nil {
		a.Recorder.Eventf(run, gate, corev1.EventTypeWarning, reasonNotificationFailed, "Notify",
			"spec.notify.channel: no notification channel %q: the manager defines none (--notification-channels)", channel)
		return
	}
	m := notify.Message{Event: "GateOpened", Namespace: run.Namespace, Run: run.Name, Step: gate.Spec.Step,
		Gate: gate.Name, GateUID: string(gate.UID), Question: gate.Spec.Message, Asks: "decision",
		Options: gate.Spec.Options, Link: a.Notifier.Link(run.Namespace, run.Name), At: time.Now().UTC()}
	if gate.Spec.Input != nil {
		m.Asks, m.Options = "input", nil
		if form, errs := humaninput.Parse(gate.Spec.Input.Raw, nil); len(errs) == 0 {
			m.Fields = form.Names()
		}
	}
	if len(m.Options) == 0 && m.Asks == "decision" {
		m.Options = []string{gatepolicy.OptionApprove, gatepolicy.OptionReject}
	}
	if err := a.Notifier.Send(channel, m); err != nil {
		a.Recorder.Eventf(run, gate, corev1.EventTypeWarning, reasonNotificationFailed, "Notify",
			"spec.notify.channel: the notification that Gate %s waits was not sent: %v", gate.Name, err)
	}
}
