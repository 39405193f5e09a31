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
	"context"
)

// Audience is the audience of the ServiceAccount token a step pod presents to the manager's
// artifact endpoint: a token the API server itself refuses (its audience is the API server's
// own), good for nothing but asking for grants, bound to the pod and valid for minutes.
const Audience = "ergon-artifacts"

// Reasons a transfer fails a step with (as api/v1alpha1 names them).
const (
	ReasonStoreFailed    = "ArtifactStoreFailed"
	ReasonDigestMismatch = "ArtifactDigestMismatch"
	ReasonTooLarge       = "ArtifactTooLarge"
	ReasonMissing        = "ArtifactMissing"
	ReasonInputMissing   = "InputArtifactMissing"
	ReasonNotDeclared    = "ArtifactNotDeclared"
	ReasonUnauthorized   = "Unauthorized"
)

// Paths of the manager's artifact endpoint, on its HTTPS server.
const (
	// PathGrants takes a GrantsRequest (POST, with the pod's token as a Bearer) and answers a
	// GrantsResponse.
	PathGrants = "/artifacts/v1/grants"
	// PathBlobs is followed by a signed Grant: PUT writes the artifact, GET reads it.
	PathBlobs = "/artifacts/v1/blobs/"
)

// GrantsRequest asks for grants to write the step's artifacts and to read its inputs.
type GrantsRequest struct {
	Put []PutRequest `json:"put,omitempty"`
	Get []GetRequest `json:"get,omitempty"`
}

// PutRequest announces an artifact the attempt is about to write.
type PutRequest struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// GetRequest names an artifact of an earlier step that the attempt reads.
type GetRequest struct {
	Step string `json:"step"`
	Name string `json:"name"`
}

// GrantsResponse answers a GrantsRequest, in its order.
type GrantsResponse struct {
	Put []Transfer `json:"put,omitempty"`
	Get []Transfer `json:"get,omitempty"`
}

// Transfer is how to write or read one artifact: a URL, relative to the artifact endpoint
// (the manager's store) or absolute (a presigned URL of S3), and the headers to send with it.
type Transfer struct {
	Step    string            `json:"step,omitempty"`
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	// Size and SHA256 are what a read must find.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Problem is the body of an error answer of the artifact endpoint.
type Problem struct {
	// Reason is a step failure reason, such as ArtifactTooLarge; Message says what happened.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PodSpec tells a step pod's entrypoint which artifacts to read before the command and to
// write after it, with the paths the controller resolved.
type PodSpec struct {
	Put []PodFile `json:"put,omitempty"`
	Get []PodFile `json:"get,omitempty"`
}

// PodFile is one artifact of a PodSpec: Step is empty for one the step writes.
type PodFile struct {
	Step string `json:"step,omitempty"`
	Name string `json:"name"`
	Path string `json:"path"`
}

// Scope is what one attempt of one step may write and read.
type Scope struct {
	// Puts are the artifacts the attempt may write, by name.
	Puts map[string]Ref
	// Gets are the artifacts it may read, by "STEP/NAME".
	Gets map[string]Recorded
	// MaxBytes bounds one artifact, RunBytes what the Run may keep in all, and RunBytesKept
	// is what its steps keep already.
	MaxBytes, RunBytes, RunBytesKept int64
}

// Recorded is an artifact as its Run records it.
type Recorded struct {
	Key    string
	Size   int64
	SHA256 string
}

// Authority says what the pod behind a token may do.
type Authority interface {
	Scope(ctx context.Context, token string) (*Scope, error)
}

// Refusal is an error the endpoint answers as it says: 401 for a token it cannot trust, 403 for
// a pod that may not, 413 for a limit.
type Refusal struct {
	Status  int
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Message }
