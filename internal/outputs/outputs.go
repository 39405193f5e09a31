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
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// The keys of a step's output ConfigMap.
const (
	// KeyOutput holds the step's whole output.
	KeyOutput = "output"
	// KeyTranscript holds an agent step's transcript.
	KeyTranscript = "transcript"
)

// PreviewSize is how much of an output the Run's status shows inline.
const PreviewSize = 1024

// Preview is the start of a value, at most PreviewSize bytes, cut at a rune boundary.
func Preview(value string) string {
	if len(value) <= PreviewSize {
		return value
	}
	cut := PreviewSize
	for cut > 0 && !utf8.RuneStart(value[cut]) {
		cut--
	}
	return value[:cut]
}

// Value describes a whole output for the Run's status: a preview and its size and, when the
// preview does not hold it all, its digest and where the whole value is kept (ConfigMap).
func Value(run, step, value string) *ergonv1alpha1.OutputValue {
	out := &ergonv1alpha1.OutputValue{Preview: Preview(value), Size: int64(len(value))}
	if len(value) > len(out.Preview) {
		out.SHA256 = wire.Digest([]byte(value))
		out.Ref = &ergonv1alpha1.OutputRef{ConfigMap: naming.OutputConfigMapName(run, step), Key: KeyOutput}
	}
	return out
}

// Transcript describes an agent step's transcript for the Run's status: its size and digest,
// and the output ConfigMap that keeps it. It has no preview: it is a record for people and
// tools, not data for later steps. Nil when the step left none.
func Transcript(run, step, transcript string) *ergonv1alpha1.OutputValue {
	if transcript == "" {
		return nil
	}
	return &ergonv1alpha1.OutputValue{Size: int64(len(transcript)), SHA256: wire.Digest([]byte(transcript)),
		Ref: &ergonv1alpha1.OutputRef{ConfigMap: naming.OutputConfigMapName(run, step), Key: KeyTranscript}}
}

// ConfigMap is the ConfigMap that keeps a step's whole output and, for an agent step, its
// transcript, under the name Value and Transcript refer to. It never changes once written. An
// output that is not valid UTF-8 goes into BinaryData, which keeps it byte for byte. Who owns
// it and how it is labelled is the controller's to add.
func ConfigMap(run *ergonv1alpha1.Run, step, value, transcript string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: naming.OutputConfigMapName(run.Name, step), Namespace: run.Namespace},
		Immutable:  new(true),
	}
	if utf8.ValidString(value) {
		cm.Data = map[string]string{KeyOutput: value}
	} else {
		cm.BinaryData = map[string][]byte{KeyOutput: []byte(value)}
	}
	if transcript != "" {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[KeyTranscript] = transcript // JSON: valid UTF-8
	}
	return cm
}

// ConfigMapValue is a key of a ConfigMap, text or binary. It is a string so that the
// controller, which reads whole outputs on every pass, does not copy one it only checks.
func ConfigMapValue(cm *corev1.ConfigMap, key string) (string, bool) {
	if s, ok := cm.Data[key]; ok {
		return s, true
	}
	b, ok := cm.BinaryData[key]
	return string(b), ok
}

// Verify checks a value against the size, and the SHA-256 when there is one, that the Run's
// status records. A value the status holds whole with no size recorded is not checked for it.
func Verify(b []byte, v *ergonv1alpha1.OutputValue) error {
	if int64(len(b)) != v.Size && (v.Size != 0 || v.Ref != nil) {
		return fmt.Errorf("the output read is %d bytes, but the Run's status records %d; it was not printed", len(b), v.Size)
	}
	if v.SHA256 != "" && wire.Digest(b) != v.SHA256 {
		return fmt.Errorf("the output read does not match the SHA-256 the Run's status records (%s); it was not printed", v.SHA256)
	}
	return nil
}

// Read reads a whole output or transcript of a Run in namespace: the status's preview when it
// holds it all, else the key of the ConfigMap it refers to. Either is checked with Verify, so a
// reader never gets a value the status did not record. Read does not check who wrote the
// ConfigMap; the controller, which acts on what it reads, also requires its Run to control it
// before it checks the value with Verify (CheckOutput in controllers/internal/shared).
func Read(ctx context.Context, c client.Reader, namespace string, v *ergonv1alpha1.OutputValue) ([]byte, error) {
	if v.Ref == nil {
		b := []byte(v.Preview)
		return b, Verify(b, v)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: v.Ref.ConfigMap}, cm); err != nil {
		return nil, err
	}
	s, ok := ConfigMapValue(cm, v.Ref.Key)
	if !ok {
		return nil, fmt.Errorf("the ConfigMap %s has no key %q", cm.Name, v.Ref.Key)
	}
	b := []byte(s)
	return b, Verify(b, v)
}

// Archived is a step's output (what "") or transcript (what KeyTranscript) as the archive's
// record of its Run kept it, checked with Verify.
func Archived(rec *archive.Record, step, what string, v *ergonv1alpha1.OutputValue) ([]byte, error) {
	if v.Ref == nil {
		b := []byte(v.Preview)
		return b, Verify(b, v)
	}
	value, ok := rec.Values[archive.ValueKey(step, what)]
	if !ok {
		if what == "" {
			what = KeyOutput
		}
		return nil, fmt.Errorf("the archive kept no %s of step %s: %s", what, step, strings.Join(rec.Missing, "; "))
	}
	return []byte(value), Verify([]byte(value), v)
}
