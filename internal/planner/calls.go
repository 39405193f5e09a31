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

package planner

import (
	"github.com/ergon-dev/ergon/internal/cause"
)

// The cause caps on the child Runs a Run creates (internal/cause): how deep, how many per
// Run, how many per root. Every scene step, fan-out or loop unit of one, and Scene tool call
// asks here before it asks for a child Run, so a refused child is never created: the step
// (or unit) fails with the refusal's reason and message, which names the limit; a Scene tool
// call is answered with it as an error result, as every call that cannot run is.

// limits are the manager's cause caps, with the depth the Facts carry.
func (p *planner) limits() cause.Limits {
	l := p.f.Calls
	l.MaxDepth = p.f.MaxDepth
	return l
}

// parent is the Run's own cause, with the depth the Facts carry.
func (p *planner) parent() cause.Cause {
	c := cause.Of(p.f.Run)
	c.Depth = p.f.Depth
	return c
}

// refuseDepth says why no child Run of this Run may exist at all (it is as deep as Runs may
// nest), or nil.
func (p *planner) refuseDepth() *cause.Refusal {
	return p.limits().Chained(p.parent(), cause.Usage{})
}

// refuseChild says why the Run may not create one more child Run now, or nil. The children
// this pass asked for already count.
func (p *planner) refuseChild() *cause.Refusal {
	asked := len(p.plan.Children)
	return p.limits().Child(p.parent(), cause.Usage{Caused: p.f.Caused + asked, Children: p.f.ChildRuns + asked})
}
