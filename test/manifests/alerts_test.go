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

package manifests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is Prometheus' promtool, built by hack/promtool.sh (make promtool).
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PROMTOOL")
	if p == "" {
		p = filepath.Join(root, "bin", "promtool")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool is needed to test the chart's alerts: run `make promtool`, or set PROMTOOL (%v)", err)
	}
	return p
}

// monitoring renders the chart with its alerts and dashboard, and returns the PrometheusRule's
// groups and the dashboard's JSON.
func monitoring(t *testing.T) (groups any, dashboard []byte) {
	t.Helper()
	out := helmTemplate("--set", "metrics.alerts.enabled=true", "--set", "metrics.dashboard.enabled=true")(t)
	for doc := range strings.SplitSeq(string(out), "\n---") {
		var obj struct {
			Kind string            `json:"kind"`
			Spec map[string]any    `json:"spec"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		switch {
		case obj.Kind == "PrometheusRule":
			groups = obj.Spec["groups"]
		case obj.Kind == "ConfigMap" && obj.Data["ergon.json"] != "":
			dashboard = []byte(obj.Data["ergon.json"])
		}
	}
	if groups == nil || dashboard == nil {
		t.Fatal("the chart rendered no PrometheusRule or no dashboard with metrics.alerts and metrics.dashboard enabled")
	}
	return groups, dashboard
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The chart's alerts fire when they should and say what they should: promtool evaluates them
// over the series of testdata/alerts_test.yaml.
func TestTheChartsAlerts(t *testing.T) {
	tool := promtool(t)
	groups, _ := monitoring(t)
	dir := t.TempDir()
	writeYAML(t, filepath.Join(dir, "rules.yaml"), map[string]any{"groups": groups})
	run(t, tool, "check", "rules", filepath.Join(dir, "rules.yaml"))
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Log(string(run(t, tool, "test", "rules", filepath.Join(dir, "alerts_test.yaml"))))
}

// Every query of the dashboard is PromQL that parses, once Grafana's variables are filled in:
// promtool checks each as a recording rule.
func TestTheDashboardsQueriesParse(t *testing.T) {
	tool := promtool(t)
	_, raw := monitoring(t)
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	fill := strings.NewReplacer(`"$namespace"`, `".*"`, "$__rate_interval", "5m")
	var rules []map[string]string
	for i, p := range dashboard.Panels {
		for j, target := range p.Targets {
			rules = append(rules, map[string]string{"record": fmt.Sprintf("ergon:dashboard:panel%d_%d", i, j), "expr": fill.Replace(target.Expr)})
		}
	}
	if len(rules) < 20 {
		t.Fatalf("the dashboard has %d queries", len(rules))
	}
	path := filepath.Join(t.TempDir(), "dashboard.yaml")
	writeYAML(t, path, map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	run(t, tool, "check", "rules", path)
}
