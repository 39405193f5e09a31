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
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// pngBytes is a real 4x4 PNG.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadAttachments(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, b []byte) agentspec.Attachment {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return agentspec.Attachment{Step: "render", Name: name, Path: p}
	}
	pic := pngBytes(t)
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>`)
	items, images, err := ReadAttachments([]agentspec.Attachment{
		// A PNG named like text is still shown as an image: the bytes decide.
		file("chart.txt", pic), file("chart.svg", svg), file("notes.md", []byte("# Notes\n")),
		file("data.json", []byte(`{"a": 1}`)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].Name != "render/chart.txt" || images[0].MediaType != "image/png" || !bytes.Equal(images[0].Data, pic) {
		t.Fatalf("images = %+v", images)
	}
	if len(items) != 3 || items[0].Name != "render/chart.svg" || items[0].Value != string(svg) || items[1].Value != "# Notes\n" {
		t.Fatalf("items = %+v", items)
	}
	for name, content := range map[string][]byte{
		"program.bin": {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0},
		"huge.png":    append(append([]byte{}, pic...), make([]byte, MaxImageBytes)...),
		"latin1.txt":  {'c', 'a', 'f', 0xe9},
	} {
		_, _, err := ReadAttachments([]agentspec.Attachment{file(name, content)})
		f, ok := err.(*Failure)
		if !ok || f.Reason != ReasonInputArtifactUnsupported || !strings.Contains(f.Message, "render/"+name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := ReadAttachments([]agentspec.Attachment{{Step: "s", Name: "gone", Path: filepath.Join(dir, "gone")}}); err == nil {
		t.Error("a missing file was read")
	}
}

// TestTheModelIsShownTheImages: an image artifact reaches the model as an image part of the
// context message, a data URL of its bytes, on every request; the transcript and the
// checkpoint name it, and do not hold it.
func TestTheModelIsShownTheImages(t *testing.T) {
	pic := pngBytes(t)
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{
		{Times: 1, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "no_such_tool", Arguments: `{}`}}}},
		{Reply: fakellm.Reply{Content: "a red dot"}},
	}}, Spec{})
	h.runner.Images = []Image{{Name: "render/chart.png", MediaType: "image/png", Data: pic}}
	out, tr, f := h.run()
	if f != nil || out != "a red dot" {
		t.Fatalf("out %q, failure %v", out, f)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		var shown []string
		for _, m := range r.Messages {
			shown = append(shown, m.Images...)
			if len(m.Images) > 0 && !strings.Contains(m.Content, `image="render/chart.png"`) {
				t.Errorf("request %d: the image's message does not name it: %q", i, m.Content)
			}
		}
		if len(shown) != 1 || shown[0] != want {
			t.Errorf("request %d showed %d images, want the PNG as a data URL", i, len(shown))
		}
	}
	if j := transcriptJSON(t, tr); strings.Contains(j, base64.StdEncoding.EncodeToString(pic)) {
		t.Error("the transcript holds the image's bytes")
	}
}

// TestTheFakeModelMatchesShownImages: the fake model answers by the images a request shows,
// as the e2e's agent step relies on.
func TestTheFakeModelMatchesShownImages(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{ImageContains: "data:image/png;base64,"}, Reply: fakellm.Reply{Content: "saw it"}},
		{Reply: fakellm.Reply{Content: "saw nothing"}},
	}}, Spec{})
	if out, _, f := h.run(); f != nil || out != "saw nothing" {
		t.Fatalf("without an image: %q %v", out, f)
	}
	h.runner.Images = []Image{{Name: "s/a.png", MediaType: "image/png", Data: pngBytes(t)}}
	if out, _, f := h.run(); f != nil || out != "saw it" {
		t.Fatalf("with an image: %q %v", out, f)
	}
}
