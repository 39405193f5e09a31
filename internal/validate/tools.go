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
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// fileTools are the built-in tools that need a Workspace's volume.
var fileTools = []string{
	ergonv1alpha1.ToolReadFile, ergonv1alpha1.ToolWriteFile, ergonv1alpha1.ToolListFiles, ergonv1alpha1.ToolShell,
}

// toolName is what chat APIs accept as a function's name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// maxToolDescription bounds a tool's description, which is sent to the model with every turn.
const maxToolDescription = 1024

// validateTools checks an agent step's tools: each entry is one kind of tool, built-in tools
// exist (and the file tools have a Workspace), and no two tools share the name the model
// calls them by. Tools are a schemaless list in the CRD, so this is their only check.
func validateTools(path *field.Path, spec *ergonv1alpha1.SceneSpec, tools []ergonv1alpha1.AgentTool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	servers := 0
	for j, t := range tools {
		p := path.Index(j)
		kinds := 0
		for _, set := range []bool{t.Scene != "", t.Container != nil, t.MCP != nil} {
			if set {
				kinds++
			}
		}
		if kinds > 1 {
			errs = append(errs, field.Invalid(p, toolSummary(t), "set one of scene, container and mcp"))
			continue
		}
		if len(t.Description) > maxToolDescription {
			errs = append(errs, field.TooLong(p.Child("description"), t.Description, maxToolDescription))
		}
		errs = append(errs, validateToolApproval(p.Child("approval"), t.Approval)...)
		errs = append(errs, validateAsk(p, t)...)
		name := t.ToolName()
		switch {
		case t.IsBuiltin():
			errs = append(errs, validateBuiltinTool(p, spec, t)...)
		case t.Scene != "":
			errs = append(errs, validateSceneTool(p, t)...)
		case t.Container != nil:
			errs = append(errs, validateContainerTool(p, t)...)
		case t.MCP != nil:
			servers++
			errs = append(errs, validateMCPTool(p, t, servers, seen)...)
			continue // its tools' names are checked there
		}
		if name == "" {
			continue
		}
		if !t.IsBuiltin() && !toolName.MatchString(name) {
			errs = append(errs, field.Invalid(p.Child("name"), name, "a tool's name is 1 to 64 letters, digits, '_' or '-'"))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		seen[name] = true
	}
	return errs
}

// Bounds of a tool's approval, as a gate step's (the Gate kind's own limits).
const (
	maxMinApprovals  = 10
	maxApproverNames = 100
	maxApproverName  = 512
)

// validateToolApproval checks who approves a tool's calls. The CRD checks the same of tools
// written as objects; this check is for everything that reads Scenes without the API server
// (kubectl ergon lint), and names what the CRD allows but is no name (an empty group).
func validateToolApproval(p *field.Path, a *ergonv1alpha1.ToolApproval) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if n := a.MinApprovals; n != nil && (*n < 1 || *n > maxMinApprovals) {
		errs = append(errs, field.Invalid(p.Child("minApprovals"), *n,
			fmt.Sprintf("how many different people approve each call: from 1 to %d", maxMinApprovals)))
	}
	if a.Approvers == nil {
		return errs
	}
	names := func(p *field.Path, kind string, list []string) {
		if len(list) > maxApproverNames {
			errs = append(errs, field.TooMany(p, len(list), maxApproverNames))
		}
		seen := map[string]bool{}
		for i, name := range list {
			switch {
			case name == "":
				errs = append(errs, field.Invalid(p.Index(i), name, "name a Kubernetes "+kind))
			case len(name) > maxApproverName:
				errs = append(errs, field.TooLong(p.Index(i), name, maxApproverName))
			case seen[name]:
				errs = append(errs, field.Duplicate(p.Index(i), name))
			}
			seen[name] = true
		}
	}
	names(p.Child("approvers", "users"), "user", a.Approvers.Users)
	names(p.Child("approvers", "groups"), "group", a.Approvers.Groups)
	return errs
}

// maxAskTimeout bounds how long an agent's question may wait; maxMCPAskTimeout an MCP
// server's, whose call holds the step's pod while it waits.
const (
	maxAskTimeout    = 30 * 24 * time.Hour
	maxMCPAskTimeout = time.Hour
)

// validateAsk checks the settings of ask_human and of an MCP server's questions: only they
// take them, and a question needs no approval, being itself a person's answer.
func validateAsk(p *field.Path, t ergonv1alpha1.AgentTool) field.ErrorList {
	asksMCP := t.MCP != nil && t.Ask != nil
	if !t.AsksHuman() && !asksMCP {
		if t.Ask != nil {
			return field.ErrorList{field.Forbidden(p.Child("ask"), "only the tool "+ergonv1alpha1.ToolAskHuman+
				" and an mcp server take ask")}
		}
		return nil
	}
	var errs field.ErrorList
	if t.AsksHuman() && t.NeedsApproval() {
		errs = append(errs, field.Forbidden(p.Child("requireApproval"),
			"a question to a person needs no approval: ask says who answers it"))
	}
	a := t.Ask
	if a == nil {
		return errs
	}
	errs = append(errs, validateToolApproval(p.Child("ask"), &ergonv1alpha1.ToolApproval{
		Approvers: a.Approvers, MinApprovals: a.MinApprovals})...)
	limit, what := maxAskTimeout, "how long a question waits"
	if asksMCP {
		limit, what = maxMCPAskTimeout, "how long an MCP server's question waits, its call holding the step's pod"
	}
	if d := a.Timeout; d != nil && (d.Duration <= 0 || d.Duration > limit) {
		errs = append(errs, field.Invalid(p.Child("ask", "timeout"), d.Duration.String(),
			fmt.Sprintf("%s: more than 0 and at most %s", what, limit)))
	}
	return errs
}

// maxConversationIdle bounds how long a conversation's reply may wait for a message.
const maxConversationIdle = 30 * 24 * time.Hour

// validateConversation checks a chat step: who may write, and an output that is the agent's
// last reply as text (a contract would hold a chat to a format it never asked for).
func validateConversation(p *field.Path, a *ergonv1alpha1.AgentStep) field.ErrorList {
	c := a.Conversation
	if c == nil {
		return nil
	}
	path := p.Child("conversation")
	errs := validateToolApproval(path, &ergonv1alpha1.ToolApproval{Approvers: c.Participants})
	for i := range errs {
		errs[i].Field = strings.Replace(errs[i].Field, path.Child("approvers").String(), path.Child("participants").String(), 1)
	}
	if d := c.IdleTimeout; d != nil && (d.Duration <= 0 || d.Duration > maxConversationIdle) {
		errs = append(errs, field.Invalid(path.Child("idleTimeout"), d.Duration.String(),
			fmt.Sprintf("how long a reply waits for a message: more than 0 and at most %s", maxConversationIdle)))
	}
	if o := a.Output; o != nil && (o.Schema != nil || len(o.Outputs) > 0 || (o.Format != "" && o.Format != "text" && o.Format != "markdown")) {
		errs = append(errs, field.Forbidden(p.Child("output"),
			"a conversation's output is the agent's last reply, as text or markdown: remove the contract"))
	}
	return errs
}

// validateBuiltinTool checks a built-in tool's entry.
func validateBuiltinTool(p *field.Path, spec *ergonv1alpha1.SceneSpec, t ergonv1alpha1.AgentTool) field.ErrorList {
	if t.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "name a built-in tool, or set one of scene, container and mcp")}
	}
	if !slices.Contains(ergonv1alpha1.BuiltinTools, t.Name) {
		return field.ErrorList{field.NotSupported(p.Child("name"), t.Name, ergonv1alpha1.BuiltinTools)}
	}
	if t.Description != "" {
		return field.ErrorList{field.Forbidden(p.Child("description"), "a built-in tool has its own description")}
	}
	if spec.Workspace == nil && slices.Contains(fileTools, t.Name) {
		return field.ErrorList{field.Forbidden(p,
			fmt.Sprintf("the tool %s works on a Workspace's files; set spec.workspace or remove it", t.Name))}
	}
	return nil
}

// validateSceneTool checks a Scene tool's entry: a valid Scene name, and a name for the model
// that is no built-in tool's. That the Scene exists and calls no Scene that calls this one back
// is SceneCallsIn's to say.
func validateSceneTool(p *field.Path, t ergonv1alpha1.AgentTool) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(string(t.Scene)) {
		errs = append(errs, field.Invalid(p.Child("scene"), t.Scene, msg))
	}
	if slices.Contains(ergonv1alpha1.BuiltinTools, t.ToolName()) {
		errs = append(errs, field.Invalid(p.Child("name"), t.ToolName(), "a built-in tool has that name; name the Scene tool otherwise"))
	}
	return errs
}

// toolSummary names a tool entry in an error message.
func toolSummary(t ergonv1alpha1.AgentTool) string {
	switch {
	case t.Name != "":
		return t.Name
	case t.Scene != "":
		return "scene " + string(t.Scene)
	}
	return "tool"
}
