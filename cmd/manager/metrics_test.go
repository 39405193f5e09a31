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

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

// registered is the name of every metric the manager's registry serves: its packages'
// (registered when imported), those of collectors(), and controller-runtime's. A vector no
// one has counted into yet is served as nothing, so the names come from the descriptions.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	metrics.Registry.MustRegister(collectors()...)
	t.Cleanup(func() {
		for _, c := range collectors() {
			metrics.Registry.Unregister(c)
		}
	})
	descs := make(chan *prometheus.Desc)
	go func() {
		metrics.Registry.(prometheus.Collector).Describe(descs)
		close(descs)
	}()
	names := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// chartQueries renders the chart with its alerts and dashboard and returns every PromQL
// expression in them, by where it is.
func chartQueries(t *testing.T) map[string]string {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = filepath.Join("..", "..", "bin", "helm")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, "template", "ergon", filepath.Join("..", "..", "charts", "ergon"), "--kube-version", "1.37.2",
		"--set", "metrics.alerts.enabled=true", "--set", "metrics.dashboard.enabled=true")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template (run `make helm`, or set HELM): %v\n%s", err, stderr.String())
	}
	queries := map[string]string{}
	for doc := range strings.SplitSeq(string(out), "\n---") {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Groups []struct {
					Rules []struct {
						Alert string `json:"alert"`
						Expr  string `json:"expr"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"spec"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("the rendered chart: %v", err)
		}
		switch {
		case obj.Kind == "PrometheusRule":
			for _, g := range obj.Spec.Groups {
				for _, r := range g.Rules {
					queries["alert "+r.Alert] = r.Expr
				}
			}
		case obj.Kind == "ConfigMap" && obj.Data["ergon.json"] != "":
			var dashboard struct {
				Panels []struct {
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
				Templating struct {
					List []struct {
						Name       string `json:"name"`
						Definition string `json:"definition"`
					} `json:"list"`
				} `json:"templating"`
			}
			if err := json.Unmarshal([]byte(obj.Data["ergon.json"]), &dashboard); err != nil {
				t.Fatalf("the dashboard is not JSON: %v", err)
			}
			for _, p := range dashboard.Panels {
				for _, target := range p.Targets {
					queries["panel "+p.Title] += target.Expr + "\n"
				}
			}
			for _, v := range dashboard.Templating.List {
				if v.Definition != "" {
					queries["variable "+v.Name] = v.Definition
				}
			}
		}
	}
	return queries
}

// metricName finds the names of metrics in a PromQL expression: Ergon's, controller-runtime's
// and Prometheus' own up.
var metricName = regexp.MustCompile(`\b(ergon_[a-z0-9_]+|controller_runtime_[a-z0-9_]+|up)\b`)

// Every metric an alert or a dashboard panel reads is one the manager serves: a renamed or
// dropped metric fails here, not on someone's dashboard.
func TestTheChartsAlertsAndDashboardReadWhatTheManagerServes(t *testing.T) {
	names := registered(t)
	queries := chartQueries(t)
	alerts, panels := 0, 0
	for where, q := range queries {
		switch {
		case strings.HasPrefix(where, "alert "):
			alerts++
		case strings.HasPrefix(where, "panel "):
			panels++
		}
		found := metricName.FindAllString(q, -1)
		if len(found) == 0 {
			t.Errorf("%s reads no metric the test knows: %s", where, q)
		}
		for _, m := range found {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suffix); ok && names[b] {
					base = b
				}
			}
			if !names[base] && m != "up" {
				t.Errorf("%s reads %s, which the manager does not serve", where, m)
			}
		}
	}
	if alerts < 10 || panels < 20 {
		t.Errorf("found %d alerts and %d panels in the rendered chart; is the chart's monitoring rendered?", alerts, panels)
	}
}

// Every metric of Ergon's own is in the table of docs/observability.md.
func TestEveryErgonMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range registered(t) {
		if strings.HasPrefix(name, "ergon_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) < 20 {
		t.Fatalf("the registry describes only %d ergon_ metrics: %v", len(names), names)
	}
	for _, name := range names {
		if !bytes.Contains(doc, []byte("`"+name+"`")) && !bytes.Contains(doc, []byte("`"+name+"{")) {
			t.Errorf("%s is not in docs/observability.md's table", name)
		}
	}
}
