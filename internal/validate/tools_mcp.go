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

package validate

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Bounds of an agent step's MCP tools.
const (
	// maxMCPServers bounds the MCP servers of one step: the runtime connects to each at the
	// start of every attempt.
	maxMCPServers = 4
	// maxMCPAllow bounds the tools one server may offer the model.
	maxMCPAllow = 32
	// maxMCPURL bounds a server's URL.
	maxMCPURL = 2048
)

// validateMCPTool checks an mcp entry, the n-th of its step: an absolute http(s) URL without
// credentials or fragment, and a non-empty allow-list of tool names that no other tool of
// the step has (seen holds the names so far; the model calls a server's tools by their own
// names).
func validateMCPTool(p *field.Path, t ergonv1alpha1.AgentTool, n int, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("mcp")
	if n > maxMCPServers {
		errs = append(errs, field.TooMany(p, n, maxMCPServers))
	}
	if t.Name != "" {
		errs = append(errs, field.Forbidden(p.Child("name"), "an MCP server's tools keep their own names; list them in mcp.allow"))
	}
	errs = append(errs, validateMCPURL(mp.Child("url"), string(t.MCP.URL))...)
	ap := mp.Child("allow")
	if len(t.MCP.Allow) == 0 {
		errs = append(errs, field.Required(ap, "list the server's tools the agent may call"))
	}
	if len(t.MCP.Allow) > maxMCPAllow {
		errs = append(errs, field.TooMany(ap, len(t.MCP.Allow), maxMCPAllow))
	}
	for k, name := range t.MCP.Allow {
		switch {
		case !toolName.MatchString(name):
			errs = append(errs, field.Invalid(ap.Index(k), name, "a tool's name is 1 to 64 letters, digits, '_' or '-'"))
		case seen[name]:
			errs = append(errs, field.Duplicate(ap.Index(k), name))
		}
		seen[name] = true
	}
	return errs
}

// validateMCPURL checks an MCP server's URL. Where it may connect is the runtime's address
// guard's to decide: a server inside the cluster must be among the step's allowHosts.
func validateMCPURL(p *field.Path, raw string) field.ErrorList {
	if raw == "" {
		return field.ErrorList{field.Required(p, "the server's streamable HTTP endpoint, an http or https URL")}
	}
	if len(raw) > maxMCPURL {
		return field.ErrorList{field.TooLong(p, raw, maxMCPURL)}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, raw, err.Error())}
	case (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "":
		return field.ErrorList{field.Invalid(p, raw, "must be an absolute http or https URL")}
	case u.User != nil:
		return field.ErrorList{field.Invalid(p, raw, "must not hold credentials")}
	case strings.Contains(raw, "#"):
		return field.ErrorList{field.Invalid(p, raw, "must not have a fragment")}
	}
	return nil
}
