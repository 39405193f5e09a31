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

package hooks

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// deliveries counts the answers to deliveries by HTTP status, which the server chooses from
// a few (202, 400, 401, 405, 413, 429, 503, ...); the namespace and Trigger a sender names are
// not labels: anyone on the network can name any.
var deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ergon_hook_deliveries_total",
	Help: "Deliveries to webhook Triggers, by the HTTP status of the answer (202 accepted; 401 not authenticated; ...).",
}, []string{"code"})

// Collectors are the Server's metrics, for the manager's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{deliveries}
}

func countDelivery(status int) { deliveries.WithLabelValues(strconv.Itoa(status)).Inc() }
