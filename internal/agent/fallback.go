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
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// FallbackPolicy names and versions when the runtime switches to a fallback model: at once
// after a 5xx, and after the retries of a 429, a connection error or a malformed answer.
// An attempt starts on the step's own model, a resumed one too.
const FallbackPolicy = "fallback/v1"

// ModelSwitch records a switch to a fallback model in the transcript.
type ModelSwitch struct {
	// From and To are the models' names among the Scene's models.
	From string `json:"from"`
	To   string `json:"to"`
	// Why is the failure of the model switched from.
	Why string `json:"why"`
}

// model is one model the loop may call: the step's own, then its fallbacks in order.
type model struct {
	cfg    ModelConfig
	client openai.Client
}

// models builds the clients of the step's model and its fallbacks.
func (l *loop) models() []model {
	s := l.Spec
	ms := []model{{cfg: s.Model, client: l.client(s.Model, l.APIKey)}}
	for i, fb := range s.Fallbacks {
		key := ""
		if i < len(l.FallbackKeys) {
			key = l.FallbackKeys[i]
		}
		ms = append(ms, model{cfg: fb, client: l.client(fb, key)})
	}
	return ms
}

func (l *loop) client(m ModelConfig, key string) openai.Client {
	// The SDK reads OPENAI_* variables; the spec alone decides.
	opts := []option.RequestOption{option.WithBaseURL(m.BaseURL), option.WithMaxRetries(0), option.WithAPIKey(key)}
	if l.ProviderHTTP != nil {
		opts = append(opts, option.WithHTTPClient(l.ProviderHTTP))
	}
	if l.Retry.CallTimeout > 0 {
		opts = append(opts, option.WithRequestTimeout(l.Retry.CallTimeout))
	}
	return openai.NewClient(opts...)
}

// model is the configuration of the model the loop calls now.
func (l *loop) model() ModelConfig {
	if len(l.ms) == 0 {
		return l.Spec.Model
	}
	return l.ms[l.cur].cfg
}

// canFallBack says whether a model is left to switch to.
func (l *loop) canFallBack() bool { return l.cur+1 < len(l.ms) }

// useModel points the request at the current model.
func (l *loop) useModel(params *openai.ChatCompletionNewParams) {
	m := l.model()
	params.Model = m.Model
	params.Temperature, params.Seed = openai.ChatCompletionNewParams{}.Temperature, openai.ChatCompletionNewParams{}.Seed
	if m.Temperature != nil {
		params.Temperature = openai.Float(*m.Temperature)
	}
	if m.Seed != nil {
		params.Seed = openai.Int(*m.Seed)
	}
}

// call makes one model call and, while the current model is unavailable and a fallback is
// left, switches to the next one, refits the conversation to its budget and calls it.
func (l *loop) call(ctx context.Context, params *openai.ChatCompletionNewParams, turn int) (*openai.ChatCompletion, error) {
	for {
		resp, err := l.complete(ctx, &l.ms[l.cur].client, *params)
		var f *Failure
		if err == nil || !errors.As(err, &f) || f.Reason != ReasonModelUnavailable || !l.canFallBack() {
			return resp, err
		}
		from := l.model()
		l.cur++
		to := l.model()
		sw := &ModelSwitch{From: modelName(from), To: modelName(to), Why: l.red.String(f.Message)}
		l.t.Entries = append(l.t.Entries, Entry{Turn: turn, Role: RoleNote, Switch: sw,
			Content: fmt.Sprintf("switched from model %s to its fallback %s: %s", sw.From, sw.To, sw.Why)})
		if l.Log != nil {
			l.Log(fmt.Sprintf("model %s is unavailable; switching to %s", sw.From, sw.To))
		}
		l.useModel(params)
		if err := l.fitContext(turn); err != nil {
			return nil, err
		}
		params.Messages = toParams(l.conv, l.Images)
	}
}

func modelName(m ModelConfig) string {
	if m.Name != "" {
		return m.Name
	}
	return m.Model
}
