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

// Command fakellm serves a fake OpenAI-compatible chat API scripted by a file (see package
// fakellm), for the end-to-end tests and the local cluster.
//
//	fakellm --script /etc/fakellm/script.yaml --listen :8080
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/ergon-dev/ergon/test/fakellm"
)

func main() {
	script := flag.String("script", "/etc/fakellm/script.yaml", "the script, YAML or JSON")
	listen := flag.String("listen", ":8080", "address to listen on")
	flag.Parse()
	s, err := fakellm.Load(*script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fakellm: %d rules, %d routes, listening on %s\n", len(s.Rules), len(s.Routes), *listen)
	var h http.Handler = fakellm.New(*s)
	if len(s.MCPTools) > 0 {
		mux := http.NewServeMux()
		mux.Handle("/mcp", fakellm.MCPHandler(s.MCPTools))
		mux.Handle("/", h)
		h = mux
	}
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}
