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

// The console serves Ergon's web console. This file reads flags and wires the parts
// together; what the console does lives in internal/console.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ergon-dev/ergon/internal/console"
	"github.com/ergon-dev/ergon/internal/protocols"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

// options are the console's flags.
type options struct {
	addr, kubeconfig, proxyHeader, namespace, certFile, keyFile, traceURL, secretFile string
	readOnly                                                                          bool
	maxStreams                                                                        int
	protocols                                                                         protocolOptions
}

// protocolOptions are the flags of the MCP and A2A endpoints (internal/protocols).
type protocolOptions struct {
	enabled                                   bool
	namespaces, origins, authorizationServers []string
	resource                                  string
	callWait                                  time.Duration
	rate                                      float64
	burst                                     int
}

// parseFlags reads the flags from args into a FlagSet of the console's own: the packages it
// imports register flags of theirs on the process-wide set (controller-runtime's --kubeconfig),
// which must neither clash with the console's nor appear in its help.
func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.StringVar(&o.addr, "bind-address", "127.0.0.1:8080", "address to serve the console on")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"kubeconfig naming the API server (address and CA); in a pod, the in-cluster one. Its credentials serve --read-only only")
	fs.BoolVar(&o.readOnly, "read-only", false,
		"show Ergon to everyone with the console's own identity (a ServiceAccount bound to view), no login, and refuse every write")
	fs.StringVar(&o.proxyHeader, "auth-header", "",
		"take each viewer's bearer token from this header, set by an authenticating proxy in front of the console "+
			"(e.g. X-Forwarded-Access-Token); only when every request passes that proxy")
	fs.StringVar(&o.namespace, "default-namespace", "default", "namespace shown first, and to viewers who may not list namespaces")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "serve HTTPS with this certificate (with --tls-key-file)")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&o.secretFile, "key-file", "",
		"a file of at least 32 bytes that signs CSRF tokens and the MCP endpoint's call state; replicas that share it accept "+
			"each other's (default: a key drawn at start)")
	fs.StringVar(&o.traceURL, "trace-url", "",
		"link each Run to its trace: an http(s) URL with {traceId} where the Run's trace id goes, e.g. https://jaeger.example/trace/{traceId}")
	fs.IntVar(&o.maxStreams, "max-streams", 500,
		"live streams (server-sent events) open at once; each holds one watch per kind with its viewer's token")
	fs.BoolVar(&o.protocols.enabled, "protocols", true,
		"serve Scenes labelled mcp.ergon.dev/tool=true as MCP tools at /mcp and those labelled a2a.ergon.dev/agent=true as A2A "+
			"agents at /a2a/NAMESPACE/SCENE, to callers with a Kubernetes bearer token, as those callers (docs/protocols.md)")
	fs.Func("protocol-namespaces", "comma-separated namespaces /mcp offers the Scenes of to callers who may not list "+
		"namespaces (default: --default-namespace)", listFlag(&o.protocols.namespaces))
	fs.Func("protocol-allowed-origins", "comma-separated browser origins (https://host[:port]) allowed to call the endpoints; "+
		"a request with another Origin header is refused", listFlag(&o.protocols.origins))
	fs.StringVar(&o.protocols.resource, "protocol-resource-url", "",
		"the MCP endpoint's public URL (https://HOST/mcp), named by its OAuth protected-resource metadata")
	fs.Func("protocol-authorization-servers", "comma-separated issuers of the tokens the API server accepts (the cluster's "+
		"OIDC issuer), named by the protected-resource metadata", listFlag(&o.protocols.authorizationServers))
	fs.DurationVar(&o.protocols.callWait, "protocol-call-wait", protocols.DefaultCallWait,
		"how long a call waits for its Run before it answers with a handle to poll")
	fs.Float64Var(&o.protocols.rate, "protocol-rate", protocols.DefaultRate, "requests a second one caller may make")
	fs.IntVar(&o.protocols.burst, "protocol-burst", protocols.DefaultBurst, "requests one caller may make at once")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, nil
}

func run(args []string) error {
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctrllog.SetLogger(zap.New())
	cfg, err := restConfig(o.kubeconfig, o.readOnly)
	if err != nil {
		return err
	}
	key, err := signingKey(o.secretFile)
	if err != nil {
		return err
	}
	c := console.Config{APIServer: cfg, ProxyHeader: o.proxyHeader, Key: key, DefaultNamespace: o.namespace, MaxStreams: o.maxStreams,
		TraceURL: o.traceURL}
	if o.readOnly {
		c.ReadOnly = cfg
	}
	srv, err := console.New(c)
	if err != nil {
		return err
	}
	handler, err := withProtocols(srv.Handler(), o, cfg, key)
	if err != nil {
		return err
	}
	hs := &http.Server{Addr: o.addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	scheme := "http"
	if o.certFile != "" {
		scheme = "https"
	}
	mode := "as each viewer"
	if o.readOnly {
		mode = "read-only"
	}
	fmt.Fprintf(os.Stderr, "console: serving %s://%s (%s), API server %s\n", scheme, o.addr, mode, cfg.Host)
	if o.certFile != "" {
		err = hs.ListenAndServeTLS(o.certFile, o.keyFile)
	} else {
		err = hs.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// restConfig is the API server to reach: from --kubeconfig or KUBECONFIG, else in-cluster. In
// a pod the console has no token of its own unless it is read-only: it then knows only the
// API server's address and CA, and every request brings its viewer's token.
func restConfig(kubeconfig string, readOnly bool) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	switch {
	case kubeconfig != "":
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	case readOnly:
		return rest.InClusterConfig()
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("no kubeconfig, and not in a pod: set --kubeconfig or KUBECONFIG")
	}
	return &rest.Config{Host: "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}}, nil
}

// withProtocols serves the MCP and A2A endpoints beside the console, when they are enabled.
func withProtocols(page http.Handler, o options, cfg *rest.Config, key []byte) (http.Handler, error) {
	if !o.protocols.enabled {
		return page, nil
	}
	namespaces := o.protocols.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{o.namespace}
	}
	srv, err := protocols.New(protocols.Config{APIServer: cfg, Namespaces: namespaces, AllowedOrigins: o.protocols.origins,
		Resource: o.protocols.resource, AuthorizationServers: o.protocols.authorizationServers, CallWait: o.protocols.callWait,
		Rate: o.protocols.rate, Burst: o.protocols.burst, Key: key})
	if err != nil {
		return nil, err
	}
	endpoints := srv.Handler()
	mux := http.NewServeMux()
	for _, p := range []string{protocols.MCPPath, protocols.MCPPath + "/", protocols.A2APath + "/", protocols.MetadataPath} {
		mux.Handle(p, endpoints)
	}
	mux.Handle("/", page)
	return mux, nil
}

// listFlag parses a comma-separated flag into its non-empty items.
func listFlag(into *[]string) func(string) error {
	return func(v string) error {
		*into = nil
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*into = append(*into, item)
			}
		}
		return nil
	}
}

// signingKey is the key in file, or one drawn now when no file is named.
func signingKey(file string) ([]byte, error) {
	if file == "" {
		key := make([]byte, 32)
		_, err := rand.Read(key)
		return key, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if b = bytes.TrimSpace(b); len(b) < 32 {
		return nil, fmt.Errorf("--key-file %s: %d bytes, want at least 32", file, len(b))
	}
	return b, nil
}
