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
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ergon-dev/ergon/internal/console"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

// options are the console's flags.
type options struct {
	addr, kubeconfig, proxyHeader, namespace, certFile, keyFile, traceURL string
	readOnly                                                              bool
	maxStreams                                                            int
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
	fs.StringVar(&o.traceURL, "trace-url", "",
		"link each Run to its trace: an http(s) URL with {traceId} where the Run's trace id goes, e.g. https://jaeger.example/trace/{traceId}")
	fs.IntVar(&o.maxStreams, "max-streams", 500,
		"live streams (server-sent events) open at once; each holds one watch per kind with its viewer's token")
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
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
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
	hs := &http.Server{Addr: o.addr, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
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
