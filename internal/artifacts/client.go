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

package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Failure is why a transfer failed, as a step failure reason and a message.
type Failure struct {
	Reason, Message string
}

func (f *Failure) Error() string { return f.Message }

// Client is a step pod's side of the artifact endpoint.
type Client struct {
	endpoint  *url.URL
	http      *http.Client
	tokenFile string
}

// NewClient makes a Client of the endpoint (https://...), trusting the CA certificates caPEM
// (the system's when empty) for serverName (the endpoint's host when empty), presenting the
// token in tokenFile, which the kubelet renews.
func NewClient(endpoint, caPEM, serverName, tokenFile string) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the artifact endpoint %q is not an http(s) URL", endpoint)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if caPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(caPEM)) {
			return nil, errors.New("the artifact endpoint's CA holds no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if serverName != "" {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.ServerName = serverName
	}
	return &Client{endpoint: u, http: &http.Client{Transport: tr}, tokenFile: tokenFile}, nil
}

// Grants asks for the grants of req.
func (c *Client) Grants(ctx context.Context, req GrantsRequest) (*GrantsResponse, error) {
	token, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return nil, &Failure{Reason: ReasonStoreFailed, Message: "reading the pod's artifact token: " + err.Error()}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var resp GrantsResponse
	err = c.retry(ctx, func() (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.JoinPath(PathGrants).String(), bytes.NewReader(body))
		if err == nil {
			r.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
			r.Header.Set("Content-Type", "application/json")
		}
		return r, err
	}, func(r *http.Response) error { return json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&resp) })
	return &resp, err
}

// Upload writes file to the store as t says.
func (c *Client) Upload(ctx context.Context, t Transfer, file string) error {
	u, err := c.resolve(t.URL)
	if err != nil {
		return err
	}
	return c.retry(ctx, func() (*http.Request, error) {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		r, err := http.NewRequestWithContext(ctx, http.MethodPut, u, f)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		r.ContentLength = t.Size
		for k, v := range t.Headers {
			r.Header.Set(k, v)
		}
		return r, nil
	}, func(*http.Response) error { return nil })
}

// Download reads the artifact t names into file, and checks its size and digest: a file with
// other bytes is removed, and the error says so.
func (c *Client) Download(ctx context.Context, t Transfer, file string) error {
	u, err := c.resolve(t.URL)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return c.retry(ctx, func() (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			for k, v := range t.Headers {
				r.Header.Set(k, v)
			}
		}
		return r, err
	}, func(r *http.Response) error {
		out, err := os.CreateTemp(filepath.Dir(file), ".download-*")
		if err != nil {
			return err
		}
		defer func() { _ = os.Remove(out.Name()) }()
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r.Body, t.Size+1))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &Failure{Reason: ReasonStoreFailed, Message: fmt.Sprintf("reading artifact %s of step %s: %v", t.Name, t.Step, err)}
		}
		if got := hex.EncodeToString(h.Sum(nil)); n != t.Size || got != t.SHA256 {
			return &Failure{Reason: ReasonDigestMismatch, Message: fmt.Sprintf("artifact %s of step %s: the store "+
				"holds %d bytes with sha256 %s, where the Run recorded %d bytes with sha256 %s", t.Name, t.Step, n, got,
				t.Size, t.SHA256)}
		}
		if err := os.Chmod(out.Name(), 0o644); err != nil {
			return err
		}
		return os.Rename(out.Name(), file)
	})
}

func (c *Client) resolve(ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return c.endpoint.ResolveReference(u).String(), nil
}

// attempts is how often a transfer is tried, 1 + 2 + ... + 5 s apart: a manager that
// restarts, a store that blinks, or a Run whose status does not name the pod yet costs a
// retry, not the step.
const attempts = 6

// retry sends the request made by build, and reads a 2xx answer with read. A refusal (4xx)
// fails at once with the endpoint's reason (an expired grant too: the caller asks for new
// ones); anything else is tried again, up to attempts times.
func (c *Client) retry(ctx context.Context, build func() (*http.Request, error), read func(*http.Response) error) error {
	var last error
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(i) * time.Second):
			}
		}
		req, err := build()
		if err != nil {
			return err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			last = &Failure{Reason: ReasonStoreFailed, Message: fmt.Sprintf("%s did not answer (a NetworkPolicy, "+
				"such as the egress of a Workspace the step runs against, may stand between): %v", req.URL.Host, err)}
			continue
		}
		err = func() error {
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode/100 == 2 {
				return read(resp)
			}
			var p Problem
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if json.Unmarshal(b, &p) != nil || p.Reason == "" {
				p = Problem{Reason: ReasonStoreFailed, Message: fmt.Sprintf("the artifact store answered %s: %s",
					resp.Status, bytes.TrimSpace(b[:min(len(b), 512)]))}
			}
			f := &Failure{Reason: p.Reason, Message: p.Message}
			if resp.StatusCode/100 == 4 {
				return &permanent{f}
			}
			return f
		}()
		var perm *permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &perm):
			return perm.Failure
		}
		last = err
		var f *Failure
		if errors.As(err, &f) && f.Reason == ReasonDigestMismatch {
			return err
		}
	}
	return last
}

type permanent struct{ *Failure }

// FileDigest reads a file's size and SHA-256 (hex).
func FileDigest(file string) (int64, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, hex.EncodeToString(h.Sum(nil)), err
}
