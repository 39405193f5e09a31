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
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

// Bounds on what an agent step reads of an artifact: the size an OpenAI-compatible API takes
// for one image, and as much text as an output may have.
const (
	MaxImageBytes = 20 << 20
	MaxTextBytes  = 1 << 20
)

// ReasonInputArtifactUnsupported fails an agent step an input artifact of which is neither an
// image a model is shown nor text.
const ReasonInputArtifactUnsupported = "InputArtifactUnsupported"

// imageTypes are the media types a model is shown as images, as the bytes say (never the
// step's word).
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// ReadAttachments reads the input artifacts of an agent step: an image (PNG, JPEG, GIF or
// WebP by its first bytes) is shown to the model; text (UTF-8, such as Markdown, JSON or SVG)
// joins the context, named STEP/NAME; anything else fails the step.
func ReadAttachments(atts []agentspec.Attachment) ([]ContextItem, []Image, error) {
	var items []ContextItem
	var images []Image
	for _, a := range atts {
		name := a.Step + "/" + a.Name
		f, err := os.Open(a.Path)
		if err != nil {
			return nil, nil, &Failure{Reason: ReasonInputArtifactUnsupported, ExitCode: ExitSpec,
				Message: fmt.Sprintf("artifact %s: %v", name, err)}
		}
		b, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
		_ = f.Close()
		if err != nil {
			return nil, nil, err
		}
		kind := http.DetectContentType(b)
		switch {
		case imageTypes[kind]:
			if len(b) > MaxImageBytes {
				return nil, nil, &Failure{Reason: ReasonInputArtifactUnsupported, ExitCode: ExitSpec,
					Message: fmt.Sprintf("artifact %s is an image of more than %d bytes, more than a model is shown", name, MaxImageBytes)}
			}
			images = append(images, Image{Name: name, MediaType: kind, Data: b})
		case (strings.HasPrefix(kind, "text/") || strings.HasPrefix(kind, "application/json")) && utf8.Valid(b):
			if len(b) > MaxTextBytes {
				return nil, nil, &Failure{Reason: ReasonInputArtifactUnsupported, ExitCode: ExitSpec,
					Message: fmt.Sprintf("artifact %s is text of more than %d bytes, more than an agent reads into its context",
						name, MaxTextBytes)}
			}
			items = append(items, ContextItem{Name: name, Value: string(b)})
		default:
			return nil, nil, &Failure{Reason: ReasonInputArtifactUnsupported, ExitCode: ExitSpec,
				Message: fmt.Sprintf("artifact %s is %s: an agent reads text and is shown PNG, JPEG, GIF or WebP images", name, kind)}
		}
	}
	return items, images, nil
}
