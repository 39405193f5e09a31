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

package identity

import "k8s.io/client-go/rest"

// BearerConfig is the API server's address and CA from base with a person's bearer token and
// nothing else of base's credentials: what a server that acts only as the person who called
// it (the console, the MCP and A2A endpoints) talks to the API server with, so that RBAC and
// admission see that person, never the server.
func BearerConfig(base *rest.Config, token, userAgent string) *rest.Config {
	return &rest.Config{
		Host:    base.Host,
		APIPath: base.APIPath,
		TLSClientConfig: rest.TLSClientConfig{CAData: base.CAData, CAFile: base.CAFile, ServerName: base.ServerName,
			Insecure: base.Insecure},
		BearerToken: token,
		QPS:         50,
		Burst:       100,
		UserAgent:   userAgent,
	}
}
