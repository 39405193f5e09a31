// Command coredns is CoreDNS with only the plugins the local cluster's DNS needs: the
// kubernetes plugin for Service and Pod names, and no plugin that talks to anything outside
// the cluster (the cluster runs in a network namespace of its own, with no upstream DNS).
// Building CoreDNS this way, as its documentation describes for custom builds, skips the cloud
// SDKs of its full plugin set.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/template"
)

// directives are the plugins compiled in, in CoreDNS's own execution order.
var directives = []string{
	"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "template",
	"kubernetes", "loop",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
