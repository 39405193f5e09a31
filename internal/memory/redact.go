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

package memory

import "regexp"

// Redacted replaces what looks like a secret in a memory write.
const Redacted = "[REDACTED]"

// secretPatterns are values that look like credentials. The agent runtime redacts the
// values it knows (its API keys); these catch the ones it cannot know, such as a token a
// tool fetched, before they are kept in a store that later Runs read.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys, whole.
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	// Authorization header values.
	regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`),
	// OpenAI- and Anthropic-style API keys.
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`),
	// GitHub tokens.
	regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`),
	// AWS access key IDs.
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
	// Slack tokens.
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
	// JSON Web Tokens.
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	// password=..., token: ..., api_key=... and the like: the value goes, the name stays.
	regexp.MustCompile(`(?i)\b((?:password|passwd|secret|token|api[_-]?key|access[_-]?key)\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)`),
}

// Redact replaces what looks like a secret in s with Redacted.
func Redact(s string) string {
	for i, p := range secretPatterns {
		if i == len(secretPatterns)-1 {
			s = p.ReplaceAllString(s, "${1}"+Redacted)
			continue
		}
		s = p.ReplaceAllString(s, Redacted)
	}
	return s
}
