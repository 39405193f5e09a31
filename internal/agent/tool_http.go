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

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTPFetchMaxBody caps the response body http_fetch reads.
const HTTPFetchMaxBody = 256 << 10

const maxRedirects = 5

func init() {
	registerTool(&Tool{
		Name: "http_fetch",
		Description: "Fetch a URL over HTTP(S) with GET or POST and return the status and body (capped). " +
			"Private, loopback, link-local and metadata addresses are refused.",
		Parameters: jsonSchema(`{"type": "object", "additionalProperties": false, "required": ["url"], "properties": {
			"url": {"type": "string", "description": "http or https URL"},
			"method": {"type": "string", "enum": ["GET", "POST"]},
			"body": {"type": "string", "description": "request body for POST"},
			"content_type": {"type": "string"}}}`),
		Call: httpFetch,
	})
}

// NewHTTPClient is the client of http_fetch: every connection goes through the address
// guard, every redirect is checked like the first request, and no proxy is used.
func NewHTTPClient(resolver Resolver, allowHosts []string) *http.Client {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	allow := map[string]bool{}
	for _, h := range allowHosts {
		allow[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	g := &guardedDialer{resolver: resolver, allow: allow, timeout: 10 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           g.DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 20 * time.Second,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return checkURL(req.URL)
		},
	}
}

func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not allowed; use http or https", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("URLs with credentials are not allowed")
	}
	return nil
}

type httpFetchArgs struct {
	URL         string `json:"url"`
	Method      string `json:"method"`
	Body        string `json:"body"`
	ContentType string `json:"content_type"`
}

func httpFetch(ctx context.Context, env *ToolEnv, raw json.RawMessage) (string, error) {
	var a httpFetchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return "", fmt.Errorf("url: %v", err)
	}
	if err := checkURL(u); err != nil {
		return "", err
	}
	if a.Method == "" {
		a.Method = http.MethodGet
	}
	var body io.Reader
	if a.Method == http.MethodPost {
		body = strings.NewReader(a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, a.Method, u.String(), body)
	if err != nil {
		return "", err
	}
	if a.Method == http.MethodPost {
		ct := a.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("User-Agent", "ergon-agent")
	resp, err := env.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, HTTPFetchMaxBody+1))
	if err != nil {
		return "", fmt.Errorf("reading the response: %v", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "HTTP %d\ncontent-type: %s\n\n", resp.StatusCode, resp.Header.Get("Content-Type"))
	if len(b) > HTTPFetchMaxBody {
		out.Write(b[:HTTPFetchMaxBody])
		fmt.Fprintf(&out, "\n[truncated: the body is longer than %d bytes]", HTTPFetchMaxBody)
	} else {
		out.Write(b)
	}
	return out.String(), nil
}
