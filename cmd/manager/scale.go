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
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ergon-dev/ergon/controllers"
	"github.com/ergon-dev/ergon/internal/shard"
)

// leaderElectionID is the Lease an unsharded manager leads by; shard I of N leads by
// "shard-I." followed by it.
const leaderElectionID = "manager.ergon.dev"

// scaleOptions are the flags that split work among managers: sharding and leader election.
type scaleOptions struct {
	shard                                  shard.Shard
	leaseDuration, renewDeadline, retryPer time.Duration
}

func (o *scaleOptions) bindFlags() {
	flag.IntVar(&o.shard.Index, "shard", 0, "The shard this manager reconciles, from 0 to --shards-1: "+
		"the namespaces whose name hashes (FNV-1a) to it modulo --shards.")
	flag.IntVar(&o.shard.Count, "shards", 1, "How many shards (manager Deployments) split the namespaces. "+
		"Every manager serves the admission webhooks whatever its shard.")
	// The defaults keep a standby's takeover under 15 s (internal/shard); a leader that stops
	// cleanly (SIGTERM) releases its Lease at once.
	flag.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", shard.LeaseDuration,
		"How long standbys wait after the leader's last renewal before taking its Lease.")
	flag.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", shard.RenewDeadline,
		"How long the leader keeps trying to renew its Lease before it gives up leading (and exits).")
	flag.DurationVar(&o.retryPer, "leader-elect-retry-period", shard.RetryPeriod,
		"How often the leader renews its Lease and standbys try to take it.")
}

// apply sets the manager options sharding and leader election decide.
func (o *scaleOptions) apply(opts *ctrl.Options) error {
	if err := o.shard.Validate(); err != nil {
		return err
	}
	opts.NewCache = controllers.ShardedCache(o.shard)
	opts.LeaderElectionID = o.shard.LeaseName(leaderElectionID)
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &o.leaseDuration, &o.renewDeadline, &o.retryPer
	return nil
}
