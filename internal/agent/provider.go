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
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// complete makes one model call, retrying by the class of error: 429 after its Retry-After;
// 5xx, connection errors and malformed responses after a backoff; other 4xx fail at once.
func (l *loop) complete(ctx context.Context, client *openai.Client, params openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	for attempt := 0; ; attempt++ {
		resp, err := client.Chat.Completions.New(ctx, params)
		if ctx.Err() != nil {
			return nil, l.ctxFailure(ctx)
		}
		var last string
		wait := l.backoff(attempt)
		var apiErr *openai.Error
		switch {
		case err == nil && len(resp.Choices) == 0:
			last = "the model API answered with no choices"
		case err == nil:
			return resp, nil
		case errors.As(err, &apiErr):
			code, msg := apiErr.StatusCode, providerMessage(apiErr)
			switch {
			case code == http.StatusTooManyRequests:
				last = "the model API is rate limiting (429): " + msg
				if d, ok := retryAfter(apiErr.Response); ok {
					wait = min(d, l.Retry.MaxRetryAfter)
				}
			case code >= 500:
				last = fmt.Sprintf("the model API failed (%d): %s", code, msg)
				if l.canFallBack() { // another model is likelier to answer than this one soon
					return nil, fail(ReasonModelUnavailable, ExitProvider, "%s", last)
				}
			case isContextLength(apiErr, msg):
				return nil, fail(ReasonContextLength, ExitProvider,
					"the conversation no longer fits the model's context window; shorten the prompt or context, or lower maxTurns: %s", msg)
			default:
				return nil, fail(ReasonModelRefused, ExitProvider, "the model API refused the request (%d): %s", code, msg)
			}
		default:
			last = "calling the model API: " + err.Error()
		}
		if attempt >= l.Retry.Retries {
			return nil, fail(ReasonModelUnavailable, ExitProvider, "%s (gave up after %d attempts)", last, attempt+1)
		}
		if err := l.waitToRetry(ctx, last, attempt, wait); err != nil {
			return nil, l.ctxFailure(ctx)
		}
	}
}

// waitToRetry logs why a call failed and sleeps wait before retry attempt+1 of Retry.Retries.
func (l *loop) waitToRetry(ctx context.Context, why string, attempt int, wait time.Duration) error {
	if l.Log != nil {
		l.Log(l.red.String(fmt.Sprintf("%s; retrying in %s (retry %d of %d)", why, wait, attempt+1, l.Retry.Retries)))
	}
	return l.Sleep(ctx, wait)
}

// backoff is the delay after a failed attempt (from 0): Base doubled per attempt, at most Max.
func (l *loop) backoff(attempt int) time.Duration {
	d := l.Retry.Base
	for i := 0; i < attempt && d < l.Retry.Max; i++ {
		d *= 2
	}
	return min(d, l.Retry.Max)
}

// retryAfter reads Retry-After (seconds or an HTTP date) or retry-after-ms.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// providerMessage is the provider's own error message, short.
func providerMessage(e *openai.Error) string {
	msg := e.Message
	if msg == "" {
		msg = e.RawJSON()
	}
	if msg == "" && e.Response != nil {
		msg = e.Response.Status
	}
	return capString(strings.TrimSpace(msg), 512)
}

func isContextLength(e *openai.Error, msg string) bool {
	if e.Code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context window") ||
		strings.Contains(m, "maximum context") || strings.Contains(m, "too many tokens")
}
