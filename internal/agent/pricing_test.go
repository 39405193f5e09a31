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
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/cost"
	"github.com/ergon-dev/ergon/test/fakellm"
)

func TestPricedModelsAddUpTheCostOfEachTurn(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{
		{Times: 1, Reply: fakellm.Reply{Content: "not json", Usage: &fakellm.Usage{Prompt: 1000, Completion: 200}}},
		{Times: 1, Reply: fakellm.Reply{Status: 503, Error: "overloaded"}},
	}}, Spec{Output: Contract{Format: "json", MaxRepairs: 1}})
	h.runner.Spec.Model.Pricing = &cost.Pricing{InputPerMillion: "3.00", OutputPerMillion: "15.00"}
	withFallback(t, h, fakellm.Script{Rules: []fakellm.Rule{
		{Reply: fakellm.Reply{Content: `{"ok":true}`, Usage: &fakellm.Usage{Prompt: 2000, Completion: 100}}}}})
	h.runner.Spec.Fallbacks[0].Pricing = &cost.Pricing{InputPerMillion: "0.5", OutputPerMillion: "1.5"}
	_, tr, f := h.run()
	if f != nil {
		t.Fatal(f)
	}
	var costs []string
	for _, e := range tr.Entries {
		if e.Usage != nil {
			costs = append(costs, e.Usage.Cost)
		}
	}
	// 1000*3/1e6 + 200*15/1e6 = 0.006 on the first model; 2000*0.5/1e6 + 100*1.5/1e6 = 0.00115
	// on its fallback, at its own prices.
	if strings.Join(costs, " ") != "0.006 0.00115" || tr.Usage.Cost != "0.00715" {
		t.Fatalf("turn costs %v, total %q", costs, tr.Usage.Cost)
	}
}

func TestUnpricedModelsReportNoCost(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}}, Spec{})
	_, tr, f := h.run()
	if f != nil || tr.Usage.Cost != "" || tr.Usage.TotalTokens == 0 {
		t.Fatalf("usage %+v, failure %v", tr.Usage, f)
	}
}

func TestAPriceThatIsNotADecimalIsASpecError(t *testing.T) {
	h := newHarness(t, fakellm.Script{}, Spec{})
	h.runner.Spec.Model.Pricing = &cost.Pricing{InputPerMillion: "3", OutputPerMillion: "1e3"}
	_, _, f := h.run()
	wantFailure(t, f, ReasonSpecInvalid, `model.pricing.outputPerMillion: "1e3" is not a decimal`)
}
