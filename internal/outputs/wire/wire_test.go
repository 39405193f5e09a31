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

package wire

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func handBack(t *testing.T, output []byte, noise string) ([]byte, error) {
	t.Helper()
	var log bytes.Buffer
	log.WriteString(noise)
	msg, err := Write(&log, output, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > 4096 {
		t.Fatalf("the report is %d bytes, more than a termination message holds", len(msg))
	}
	r, err := ParseReport(string(msg))
	if err != nil {
		t.Fatal(err)
	}
	out, inline, err := r.Inline()
	if inline {
		return out, err
	}
	return r.FromLog(&log)
}

func TestOutputsTravelBack(t *testing.T) {
	cases := map[string][]byte{
		"an empty output travels inline":                    {},
		"a small output travels inline":                     []byte(`{"title":"Sprint 43"}`),
		"an output of exactly the inline size stays inline": bytes.Repeat([]byte("a"), InlineSize),
		"an output just over the inline size is framed":     bytes.Repeat([]byte("b"), InlineSize+1),
		"a 500 KiB output is framed":                        bytes.Repeat([]byte("0123456789abcdef\n"), 500*1024/17),
		"an output of the largest size is framed":           bytes.Repeat([]byte{0xff}, MaxSize),
	}
	for name, output := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := handBack(t, output, "the command's own log\n")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, output) {
				t.Fatalf("got %d bytes back, want %d", len(got), len(output))
			}
		})
	}
}

func TestAnOutputOverTheLimitIsRefused(t *testing.T) {
	_, err := handBack(t, make([]byte, MaxSize+1), "")
	if err == nil || !strings.Contains(err.Error(), "the output is more than 1,047,552 bytes") {
		t.Fatalf("err = %v, want the size limit in plain words", err)
	}
}

func TestThousandsGroupsDigits(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", MaxSize: "1,047,552", 1 << 30: "1,073,741,824", -12345: "-12,345"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAForgedFrameInTheLogIsIgnored(t *testing.T) {
	output := bytes.Repeat([]byte("real"), 1000)
	forged := frameBegin + Digest(output) + " -----\nZm9yZ2Vk\n" + frameEnd + "\n"
	got, err := handBack(t, output, forged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, output) {
		t.Fatalf("got %q, want the real output", got[:min(len(got), 20)])
	}
}

func TestALogWithoutTheFrameIsAnError(t *testing.T) {
	r := &Report{Version: 1, Size: 5000, SHA256: Digest(make([]byte, 5000)), Framed: true}
	if _, err := r.FromLog(strings.NewReader("nothing here\n")); err == nil {
		t.Fatal("want an error")
	}
}

func TestAMessageThatIsNoReportIsAnError(t *testing.T) {
	for _, msg := range []string{"", "Error: exit 1", `{"v":2}`} {
		if _, err := ParseReport(msg); err == nil {
			t.Errorf("ParseReport(%q) succeeded", msg)
		}
	}
}

func TestATranscriptAndAFailureReasonTravelWithTheOutput(t *testing.T) {
	output := bytes.Repeat([]byte("o"), InlineSize) // the largest inline output
	transcript := bytes.Repeat([]byte(`{"role":"assistant"}`), 3000)
	var log bytes.Buffer
	msg, err := WriteResult(&log, Result{Output: output, ExitCode: 3, Reason: "MaxTurnsExceeded",
		Message: strings.Repeat("é", MaxMessage), Transcript: transcript})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > 4096 {
		t.Fatalf("the report is %d bytes, more than a termination message holds", len(msg))
	}
	r, err := ParseReport(string(msg))
	if err != nil {
		t.Fatal(err)
	}
	if r.Reason != "MaxTurnsExceeded" || len(r.Message) > MaxMessage || !strings.HasPrefix(r.Message, "é") {
		t.Errorf("reason %q, message of %d bytes", r.Reason, len(r.Message))
	}
	if out, inline, err := r.Inline(); !inline || err != nil || !bytes.Equal(out, output) {
		t.Errorf("the output did not travel inline: %v", err)
	}
	got, err := FindFrame(bytes.NewReader(log.Bytes()), r.Transcript.Size, r.Transcript.SHA256)
	if err != nil || !bytes.Equal(got, transcript) {
		t.Fatalf("the transcript did not travel: %v", err)
	}
}

func TestFramesAreFoundInOnePassAndAMissingOneIsNamed(t *testing.T) {
	a, b := bytes.Repeat([]byte("a"), 5000), bytes.Repeat([]byte("b"), 3000)
	var log bytes.Buffer
	if err := writeFrame(&log, a, Digest(a)); err != nil {
		t.Fatal(err)
	}
	log.WriteString("noise between frames\n")
	if err := writeFrame(&log, b, Digest(b)); err != nil {
		t.Fatal(err)
	}
	found, err := FindFrames(bytes.NewReader(log.Bytes()), Part{Size: len(a), SHA256: Digest(a)}, Part{Size: len(b), SHA256: Digest(b)})
	if err != nil || !bytes.Equal(found[Digest(a)], a) || !bytes.Equal(found[Digest(b)], b) {
		t.Fatalf("found %d values, %v", len(found), err)
	}
	c := []byte("never framed")
	found, err = FindFrames(bytes.NewReader(log.Bytes()), Part{Size: len(a), SHA256: Digest(a)}, Part{Size: len(c), SHA256: Digest(c)})
	if err == nil || !strings.Contains(err.Error(), Digest(c)) || !bytes.Equal(found[Digest(a)], a) {
		t.Fatalf("err = %v; want the missing digest named and the other value found", err)
	}
}

// TestTheTailOfTheLogHoldsTheFrames: a reader that asks for only TailOf's lines and bytes at
// the end of the log finds the output and the transcript, however much the command printed
// before them, and never holds more than the frames.
func TestTheTailOfTheLogHoldsTheFrames(t *testing.T) {
	for _, size := range []int{InlineSize + 1, 57 * 60, 57*60 + 1, 300 << 10, MaxSize} {
		var log bytes.Buffer
		log.WriteString(strings.Repeat("noise the command printed\n", 5000))
		output := bytes.Repeat([]byte("o"), size)
		transcript := []byte(`{"turns":[]}`)
		msg, err := WriteResult(&log, Result{Output: output, Transcript: transcript})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ParseReport(string(msg))
		if err != nil {
			t.Fatal(err)
		}
		parts := []Part{{Size: rep.Size, SHA256: rep.SHA256}, *rep.Transcript}
		tail := TailOf(parts...)
		lines := strings.SplitAfter(log.String(), "\n")
		lines = lines[:len(lines)-1] // after the last \n
		end := strings.Join(lines[len(lines)-int(tail.Lines):], "")
		if int64(len(end)) != tail.Bytes {
			t.Fatalf("size %d: the last %d lines are %d bytes, TailOf says %d", size, tail.Lines, len(end), tail.Bytes)
		}
		found, err := FindFrames(strings.NewReader(end), parts...)
		if err != nil || !bytes.Equal(found[rep.SHA256], output) || !bytes.Equal(found[rep.Transcript.SHA256], transcript) {
			t.Fatalf("size %d: the tail does not hold both frames: %v", size, err)
		}
		// base64 (4 bytes per 3), a newline per 76 characters, and the frame lines.
		if limit := int64(base64.StdEncoding.EncodedLen(MaxSize+len(transcript)))*77/76 + 4096; tail.Bytes > limit {
			t.Fatalf("size %d: a tail of %d bytes is more than the cap plus the frames", size, tail.Bytes)
		}
	}
}

func TestAForgedFrameLongerThanItsValueDoesNotHideTheRealOne(t *testing.T) {
	value := []byte(strings.Repeat("v", 4000))
	var log bytes.Buffer
	msg, _ := Write(&log, value, 0)
	rep, _ := ParseReport(string(msg))
	// A forged frame under the same digest that never ends: the reader drops it once it is
	// longer than the value, and the entrypoint's own frame after it is still found.
	forged := "----- ERGON OUTPUT BEGIN " + rep.SHA256 + " -----\n" + strings.Repeat(strings.Repeat("A", 76)+"\n", 200)
	got, err := rep.FromLog(strings.NewReader(forged + log.String()))
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
}

func TestATailIsTheLastLinesOfALogCutToItsBytes(t *testing.T) {
	log := []byte("one\ntwo\nthree\n")
	for _, tc := range []struct {
		tail Tail
		want string
	}{
		{Tail{Lines: 2, Bytes: 100}, "two\nthree\n"},
		{Tail{Lines: 9, Bytes: 100}, "one\ntwo\nthree\n"},
		{Tail{Lines: 2, Bytes: 5}, "two\nt"},
		{Tail{Lines: 0, Bytes: 100}, ""},
	} {
		if got := string(tc.tail.Of(log)); got != tc.want {
			t.Errorf("%+v of the log = %q, want %q", tc.tail, got, tc.want)
		}
	}
}
