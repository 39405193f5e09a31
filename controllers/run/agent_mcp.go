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

package run

import (
	"slices"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/planner"
)

// mcpServers renders an agent step's MCP tools: each server with the tools it may offer and,
// when its ask lets it ask people questions, how long each waits (elicit.go). The runtime
// reaches them through http_fetch's address guard, so a server inside the cluster must be
// among the step's allowHosts.
func mcpServers(tools []ergonv1alpha1.AgentTool) []agentspec.MCPServer {
	var servers []agentspec.MCPServer
	for _, t := range tools {
		if t.MCP == nil {
			continue
		}
		srv := agentspec.MCPServer{URL: string(t.MCP.URL), Allow: slices.Clone(t.MCP.Allow), Description: t.Description}
		if t.Ask != nil {
			srv.Ask = &agentspec.Duration{Duration: planner.AskTimeout(&t)}
		}
		servers = append(servers, srv)
	}
	return servers
}
