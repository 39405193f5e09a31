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

// Command artifacts moves a step's artifacts for its entrypoint, which runs it only for a step
// that makes or reads some, so that no other step pod loads an HTTP client (docs/artifacts.md):
//
//	ergon-artifacts fetch     before the command: download the inputs, checking each digest
//	ergon-artifacts publish   after it ended with 0: upload the artifacts it wrote
//
// It reads $ERGON_ARTIFACT_SPEC, trades the pod's token for grants at the manager's artifact
// endpoint, and prints a wire.Transferred (the artifacts written, or why it failed) on stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "fetch" && os.Args[1] != "publish") {
		fmt.Fprintln(os.Stderr, "usage: ergon-artifacts fetch|publish")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
	var out wire.Transferred
	arts, err := loadArtifacts()
	if err == nil && arts != nil {
		if os.Args[1] == "fetch" {
			err = arts.fetch(ctx)
		} else {
			out.Artifacts, err = arts.publish(ctx)
		}
	}
	cancel()
	code := 0
	if err != nil {
		out.Reason, out.Message = failureOf(err)
		code = 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		code = 1
	}
	os.Exit(code)
}

// transferTimeout bounds the transfers before and after the command: an artifact moves at
// tens of MiB/s, so this is far more than the largest one needs.
const transferTimeout = 30 * time.Minute

// stepArtifacts are the artifacts a step reads and writes, from $ERGON_ARTIFACT_SPEC; nil
// when it has none.
type stepArtifacts struct {
	spec   artifacts.PodSpec
	client *artifacts.Client
}

// loadArtifacts reads the spec and makes the endpoint's client.
func loadArtifacts() (*stepArtifacts, error) {
	raw := os.Getenv(stepcontract.EnvArtifactSpec)
	if raw == "" {
		return nil, nil
	}
	a := &stepArtifacts{}
	if err := json.Unmarshal([]byte(raw), &a.spec); err != nil {
		return nil, fmt.Errorf("$%s: %w", stepcontract.EnvArtifactSpec, err)
	}
	endpoint := os.Getenv(stepcontract.EnvArtifactEndpoint)
	if endpoint == "" {
		return nil, &artifacts.Failure{Reason: "ArtifactStoreMissing", Message: "the step makes or reads artifacts, and " +
			"Ergon's manager keeps none: its --artifact-store (chart value artifacts.store) is empty"}
	}
	token := os.Getenv(stepcontract.EnvArtifactToken)
	if token == "" {
		token = stepcontract.ArtifactTokenFile
	}
	c, err := artifacts.NewClient(endpoint, os.Getenv(stepcontract.EnvArtifactCA), os.Getenv(stepcontract.EnvArtifactServerName), token)
	if err != nil {
		return nil, err
	}
	a.client = c
	return a, nil
}

// fetch downloads the artifacts the step reads, each checked against its recorded digest.
func (a *stepArtifacts) fetch(ctx context.Context) error {
	if len(a.spec.Get) == 0 {
		return nil
	}
	req := artifacts.GrantsRequest{}
	for _, f := range a.spec.Get {
		req.Get = append(req.Get, artifacts.GetRequest{Step: f.Step, Name: f.Name})
	}
	resp, err := a.client.Grants(ctx, req)
	if err != nil {
		return err
	}
	if len(resp.Get) != len(a.spec.Get) {
		return errors.New("the artifact endpoint answered another number of grants than asked")
	}
	for i, f := range a.spec.Get {
		start := time.Now()
		if err := a.client.Download(ctx, resp.Get[i], f.Path); err != nil {
			return err
		}
		logMoved("read", f.Step+"/"+f.Name, resp.Get[i].Size, time.Since(start))
	}
	return nil
}

// publish uploads the artifacts the step declares, from the files the command wrote. A file
// that is missing or is no regular file fails the step. Grants that expired meanwhile (a long
// upload, a manager that restarted) are asked for again, once.
func (a *stepArtifacts) publish(ctx context.Context) ([]wire.Artifact, error) {
	if len(a.spec.Put) == 0 {
		return nil, nil
	}
	var written []wire.Artifact
	req := artifacts.GrantsRequest{}
	for _, f := range a.spec.Put {
		info, err := os.Stat(f.Path)
		switch {
		case err != nil:
			return nil, &artifacts.Failure{Reason: artifacts.ReasonMissing, Message: fmt.Sprintf("the command did not write "+
				"artifact %s to %s: %v", f.Name, f.Path, errors.Unwrap(err))}
		case !info.Mode().IsRegular():
			return nil, &artifacts.Failure{Reason: artifacts.ReasonMissing, Message: fmt.Sprintf("artifact %s: %s is no "+
				"regular file", f.Name, f.Path)}
		}
		size, sum, err := artifacts.FileDigest(f.Path)
		if err != nil {
			return nil, err
		}
		req.Put = append(req.Put, artifacts.PutRequest{Name: f.Name, Size: size, SHA256: sum})
		written = append(written, wire.Artifact{Name: f.Name, Size: size, SHA256: sum})
	}
	var err error
	for range 2 {
		var resp *artifacts.GrantsResponse
		if resp, err = a.client.Grants(ctx, req); err != nil {
			return nil, err
		}
		if len(resp.Put) != len(a.spec.Put) {
			return nil, errors.New("the artifact endpoint answered another number of grants than asked")
		}
		for i, f := range a.spec.Put {
			start := time.Now()
			if err = a.client.Upload(ctx, resp.Put[i], f.Path); err != nil {
				break
			}
			logMoved("wrote", f.Name, resp.Put[i].Size, time.Since(start))
		}
		var fail *artifacts.Failure
		if err == nil || !errors.As(err, &fail) || fail.Reason != artifacts.ReasonUnauthorized {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return written, nil
}

// logMoved tells the step's log what moved and how fast: one line per artifact.
func logMoved(verb, name string, size int64, took time.Duration) {
	rate := float64(size) / (1 << 20) / max(took.Seconds(), 1e-6)
	fmt.Fprintf(os.Stderr, "ergon-artifacts: %s artifact %s: %d bytes in %s (%.1f MiB/s)\n", verb, name, size,
		took.Round(time.Millisecond), rate)
}

// failureOf is the reason and message a transfer error fails the step with.
func failureOf(err error) (string, string) {
	var f *artifacts.Failure
	// The entrypoint checks the reason's shape before it reaches the Run's status.
	if errors.As(err, &f) && f.Reason != "" {
		return f.Reason, f.Message
	}
	return artifacts.ReasonStoreFailed, err.Error()
}
