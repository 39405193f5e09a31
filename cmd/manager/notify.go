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
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/notify"
)

// notifications loads the channels file --notification-channels names and runs a notifier of
// them in the manager; nil, nil without one. How each notification ended is an Event on its
// Run: Notified, or NotificationFailed with why.
func notifications(mgr ctrl.Manager, path string) (runcontroller.Notifier, error) {
	if path == "" {
		return nil, nil
	}
	cfg, err := notify.Load(path)
	if err != nil {
		return nil, err
	}
	rec := mgr.GetEventRecorder("ergon-notify")
	n := notify.New(cfg, nil, func(o notify.Outcome) {
		run := &ergonv1alpha1.Run{}
		run.Namespace, run.Name = o.Message.Namespace, o.Message.Run
		if o.Err != nil {
			rec.Eventf(run, nil, corev1.EventTypeWarning, "NotificationFailed", "Notify",
				"channel %s was not told that Gate %s waits, after %d attempts: %v", o.Channel, o.Message.Gate, o.Attempts, o.Err)
			return
		}
		rec.Eventf(run, nil, corev1.EventTypeNormal, "Notified", "Notify", "channel %s was told that Gate %s waits", o.Channel, o.Message.Gate)
	})
	if err := mgr.Add(n); err != nil {
		return nil, err
	}
	setupLog.Info("Notification channels", "channels", n.Names())
	return n, nil
}
