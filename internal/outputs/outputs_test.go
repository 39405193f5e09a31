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

package outputs

import (
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

func TestOutputsStayPreviewsInTheStatus(t *testing.T) {
	small := Value("r", "s", "hello")
	if small.Ref != nil || small.Preview != "hello" || small.Size != 5 {
		t.Fatalf("small output: %+v", small)
	}
	big := Value("r", "s", string(make([]byte, 5000)))
	if big.Ref == nil || len(big.Preview) != PreviewSize || big.Size != 5000 {
		t.Fatalf("big output: preview %d bytes, ref %v", len(big.Preview), big.Ref)
	}
	if p := Preview("ab" + string(make([]byte, PreviewSize-3)) + "€"); len(p) != PreviewSize-1 {
		t.Fatalf("a preview cut inside a rune has %d bytes, want %d", len(p), PreviewSize-1)
	}
}

func TestAConfigMapKeepsAnOutputByteForByte(t *testing.T) {
	run := &ergonv1alpha1.Run{}
	run.Name, run.Namespace = "r", "ns"
	text := ConfigMap(run, "s", "héllo", `{"entries":[]}`)
	if text.Data[KeyOutput] != "héllo" || text.Data[KeyTranscript] != `{"entries":[]}` || text.BinaryData != nil {
		t.Fatalf("a text output and its transcript: %+v", text)
	}
	if text.Name != Value("r", "s", string(make([]byte, PreviewSize+1))).Ref.ConfigMap || text.Namespace != "ns" ||
		text.Immutable == nil || !*text.Immutable {
		t.Fatalf("the ConfigMap is not where the status refers, or it may change: %+v", text.ObjectMeta)
	}
	binary := ConfigMap(run, "s", "\xff\x00", "")
	if string(binary.BinaryData[KeyOutput]) != "\xff\x00" || binary.Data != nil {
		t.Fatalf("an output that is not UTF-8: %+v", binary)
	}
}
func TestVerifyChecksTheRecordedSizeAndDigest(t *testing.T) {
	data := []byte("hello\x00world")
	ok := &ergonv1alpha1.OutputValue{Size: int64(len(data)), SHA256: wire.Digest(data),
		Ref: &ergonv1alpha1.OutputRef{ConfigMap: "c", Key: "output"}}
	if err := Verify(data, ok); err != nil {
		t.Errorf("a matching value: %v", err)
	}
	if err := Verify(data[:5], ok); err == nil || !strings.Contains(err.Error(), "records 11") {
		t.Errorf("a short value: %v", err)
	}
	flipped := []byte("hello\x00worle")
	if err := Verify(flipped, ok); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a changed value: %v", err)
	}
	noDigest := &ergonv1alpha1.OutputValue{Size: 5, Preview: "hello"}
	if err := Verify([]byte("hello"), noDigest); err != nil {
		t.Errorf("without a digest the size is checked: %v", err)
	}
	if err := Verify([]byte("hell"), noDigest); err == nil {
		t.Error("without a digest a wrong size is refused")
	}
}
