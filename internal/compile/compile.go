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

// Package compile turns a Scene spec into what the engine executes: its graph, and every
// template and condition of its steps compiled and checked once. A Scene that compiles can
// only fail at run time on data (an output that lacks a key), never on its own text. The
// admission webhook and the Run controller share it, so both refuse the same Scenes.
package compile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/dag"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/humaninput"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/template"
)

// Scene is a compiled Scene spec.
type Scene struct {
	Spec  *ergonv1alpha1.SceneSpec
	Graph *dag.Graph
	// Steps by name.
	Steps map[string]*Step
	// Finally is the graph of the finally steps, which run once Graph has ended; nil when
	// the Scene has none. Steps holds them too (see outcomes.go).
	Finally *dag.Graph
	// SecretParams are the params taken from Secrets, which only pods see.
	SecretParams []ergonv1alpha1.ParamSpec
}

// Step is a compiled step.
type Step struct {
	Name  string
	Index int
	Spec  *ergonv1alpha1.Step
	// When is the step's condition, nil when it has none.
	When *expr.Program
	// FanOut is the step's forEach, Until its loop's condition; nil when it has none.
	FanOut *FanOut
	Until  *expr.Program
	// SecretParams are the params from Secrets that the step's pod gets: those whose variable
	// ERGON_PARAM_NAME a container step's command, args or env values name. Agent steps get
	// none: the agent runtime has no use for them.
	SecretParams []ergonv1alpha1.ParamSpec

	command, args []*template.Template
	// params are the names of the Scene's params that do not come from Secrets.
	params      []string
	env         map[int]*template.Template
	sceneParams map[string]*template.Template
	gateMessage *template.Template
	agentSystem *template.Template
	agentPrompt *template.Template
}

// Rendered is a step with its templates filled in.
type Rendered struct {
	Command, Args []string
	// ParamEnv are a container step's params as environment variables ERGON_PARAM_NAME, in
	// the order of the Scene's params, the secret ones excepted; Env is the step's own env.
	ParamEnv    []corev1.EnvVar
	Env         []corev1.EnvVar
	SceneParams map[string]string
	GateMessage string
	// AgentSystem and AgentPrompt are an agent step's system prompt and task.
	AgentSystem, AgentPrompt string
}

// Compile compiles and checks a Scene spec. The errors name field paths under spec.
func Compile(spec *ergonv1alpha1.SceneSpec) (*Scene, field.ErrorList) {
	c := &compiler{spec: spec, path: field.NewPath("spec")}
	return c.compile()
}

type compiler struct {
	spec *ergonv1alpha1.SceneSpec
	path *field.Path
	errs field.ErrorList
	// secrets are the params that come from Secrets; paramNames all params.
	secrets    map[string]bool
	paramNames []string
	stepNames  []string
	graph      *dag.Graph
}

func (c *compiler) compile() (*Scene, field.ErrorList) {
	nodes := make([]dag.Node, len(c.spec.Steps))
	for i, s := range c.spec.Steps {
		nodes[i] = dag.Node{Name: s.Name, DependsOn: GraphDependencies(&c.spec.Steps[i])}
	}
	if errs := c.checkAfter(); len(errs) > 0 {
		return nil, errs
	}
	graph, err := dag.Build(nodes)
	if err != nil {
		return nil, field.ErrorList{c.graphError(err, c.spec.Steps, "steps")}
	}
	c.graph = graph
	c.secrets = map[string]bool{}
	scene := &Scene{Spec: c.spec, Graph: graph, Steps: map[string]*Step{}}
	for _, p := range c.spec.Params {
		if p.ValueFrom != nil {
			c.secrets[p.Name] = true
			scene.SecretParams = append(scene.SecretParams, p)
		}
		c.paramNames = append(c.paramNames, p.Name)
	}
	for _, st := range c.spec.Steps {
		c.stepNames = append(c.stepNames, st.Name)
	}
	for _, st := range c.spec.Finally {
		c.stepNames = append(c.stepNames, st.Name)
	}
	for i := range c.spec.Steps {
		scene.Steps[c.spec.Steps[i].Name] = c.step(i)
	}
	c.compileFinally(scene)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return scene, nil
}

// fieldPath turns a dag error's "spec.steps[3].dependsOn[1]" into a field.Path.
func fieldPath(s string) *field.Path {
	return field.NewPath(s)
}

func (c *compiler) step(i int) *Step {
	spec := &c.spec.Steps[i]
	ancestors := map[string]bool{}
	for _, a := range c.graph.Ancestors(spec.Name) {
		ancestors[a] = true
	}
	return c.compileStep(spec, i, c.path.Child("steps").Index(i), func(step string) bool { return ancestors[step] })
}

// compileStep compiles a step of the graph or a finally step; upstream tells the steps that
// have ended when it runs.
func (c *compiler) compileStep(spec *ergonv1alpha1.Step, i int, path *field.Path, upstream func(string) bool) *Step {
	st := &Step{Name: spec.Name, Index: i, Spec: spec}
	if spec.When != "" {
		p, err := expr.CompileCondition(path.Child("when").String(), spec.When)
		if err != nil {
			c.errs = append(c.errs, field.Invalid(path.Child("when"), spec.When, err.Error()))
		} else {
			for _, name := range p.ParamReferences() {
				c.checkSecret(path.Child("when"), spec.When, name)
			}
			if err := p.Check(expr.Scope{Params: c.paramNames, Steps: c.stepNames, Upstream: upstream}); err != nil {
				c.errs = append(c.errs, field.Invalid(path.Child("when"), spec.When, detail(err)))
			}
			st.When = p
		}
	}
	tmpl := func(p *field.Path, text string) *template.Template {
		t, err := template.Compile(p.String(), text)
		if err != nil {
			c.errs = append(c.errs, field.Invalid(p, text, detail(err)))
			return nil
		}
		for _, ref := range t.References() {
			if ref.Kind == template.KindParams {
				c.checkSecret(p, text, ref.Name)
			}
		}
		if err := t.Check(template.Scope{Params: c.paramNames, Steps: c.stepNames, Upstream: upstream,
			Item: spec.ForEach != nil, Loop: spec.Loop != nil}); err != nil {
			c.errs = append(c.errs, field.Invalid(p, text, detail(err)))
		}
		return t
	}
	// podField is a templated field of a container: the values it prints are escaped from the
	// kubelet's $(VAR) expansion, so that no value can name a variable of the pod, a secret
	// param's above all, for the kubelet to fill in.
	podField := func(p *field.Path, text string) *template.Template {
		if t := tmpl(p, text); t != nil {
			return t.EscapeExpansion()
		}
		return nil
	}
	c.controlFlow(st, path, upstream)
	c.attemptBounds(spec, path)
	c.checkArtifacts(spec, path, upstream)
	switch {
	case spec.Container != nil:
		cp := path.Child("container")
		texts := slices.Concat(spec.Container.Command, spec.Container.Args)
		for j, s := range spec.Container.Command {
			st.command = append(st.command, podField(cp.Child("command").Index(j), s))
		}
		for j, s := range spec.Container.Args {
			st.args = append(st.args, podField(cp.Child("args").Index(j), s))
		}
		st.env = map[int]*template.Template{}
		for j, e := range spec.Container.Env {
			if e.ValueFrom == nil {
				st.env[j] = podField(cp.Child("env").Index(j).Child("value"), e.Value)
				texts = append(texts, e.Value)
			}
		}
		st.SecretParams = usedSecretParams(c.spec.Params, texts)
		for _, p := range c.spec.Params {
			if p.ValueFrom == nil {
				st.params = append(st.params, p.Name)
			}
		}
	case spec.Scene != nil:
		st.sceneParams = map[string]*template.Template{}
		for _, k := range slices.Sorted(maps.Keys(spec.Scene.Params)) {
			st.sceneParams[k] = tmpl(path.Child("scene", "params").Key(k), spec.Scene.Params[k])
		}
	case spec.Gate != nil:
		st.gateMessage = tmpl(path.Child("gate", "message"), spec.Gate.Message)
		c.errs = append(c.errs, gateInput(spec.Gate, path.Child("gate"))...)
	case spec.Agent != nil:
		st.agentSystem = tmpl(path.Child("agent", "system"), spec.Agent.System)
		st.agentPrompt = tmpl(path.Child("agent", "prompt"), spec.Agent.Prompt)
	}
	return st
}

// gateInput checks an input Gate's schema (internal/humaninput) and, when a timeout approves
// with onTimeout, that the schema's defaults make a whole answer.
func gateInput(g *ergonv1alpha1.GateStep, path *field.Path) field.ErrorList {
	if g.Input == nil {
		return nil
	}
	form, errs := humaninput.Parse(g.Input.Raw, path.Child("input"))
	if len(errs) > 0 || g.OnTimeout == "" || g.OnTimeout == gatepolicy.OptionReject {
		return errs
	}
	_, errs = form.Defaults(path.Child("input"))
	for _, e := range errs {
		e.Detail += fmt.Sprintf("; onTimeout %s takes the input's defaults when the timeout passes, so give this field a "+
			"default, or let the timeout fail the step (no onTimeout) or reject it (onTimeout: reject)", g.OnTimeout)
	}
	return errs
}

// checkSecret refuses a template or condition that reads a param coming from a Secret: its
// value never passes through the Run. Other references are checked by the template and
// expression packages' own Check.
func (c *compiler) checkSecret(p *field.Path, text, param string) {
	if c.secrets[param] {
		c.errs = append(c.errs, field.Invalid(p, text, fmt.Sprintf(
			"param %q comes from a Secret and is never rendered into a template; read it in the step from $%s",
			param, SecretParamEnv(param))))
	}
}

// detail is what a template or expression error says, without the field its path repeats.
func detail(err error) string {
	var te *template.Error
	var ee *expr.Error
	switch {
	case errors.As(err, &te):
		return te.Detail
	case errors.As(err, &ee):
		return ee.Detail
	}
	return err.Error()
}

// SecretParamEnv is the environment variable that carries a param into step pods: a secret
// one from its Secret, by the kubelet, and the others with their values.
func SecretParamEnv(param string) string {
	return stepcontract.EnvParamPrefix + param
}

// usedSecretParams are the secret params whose variable one of texts names, as a whole name
// ($ERGON_PARAM_token, ${ERGON_PARAM_token}, $(ERGON_PARAM_token) or os.environ["ERGON_PARAM_token"]
// all do; ERGON_PARAM_token2 does not name ERGON_PARAM_token).
func usedSecretParams(params []ergonv1alpha1.ParamSpec, texts []string) []ergonv1alpha1.ParamSpec {
	var used []ergonv1alpha1.ParamSpec
	for _, p := range params {
		if p.ValueFrom != nil && slices.ContainsFunc(texts, func(t string) bool { return namesVariable(t, SecretParamEnv(p.Name)) }) {
			used = append(used, p)
		}
	}
	return used
}

// namesVariable reports whether text holds name not joined to other identifier characters.
func namesVariable(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isIdentByte(text[start-1])) && (end == len(text) || !isIdentByte(text[end])) {
			return true
		}
		i = start + 1
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Render fills in the step's templates over data, as template.Data.Map returns it; callers
// that render many steps convert their data once.
func (s *Step) Render(data map[string]any) (*Rendered, error) {
	r := &Rendered{}
	var err error
	exec := func(t *template.Template) string {
		if t == nil || err != nil {
			return ""
		}
		var out string
		out, err = t.ExecuteMap(data)
		return out
	}
	for _, t := range s.command {
		r.Command = append(r.Command, exec(t))
	}
	for _, t := range s.args {
		r.Args = append(r.Args, exec(t))
	}
	if s.Spec.Container != nil {
		r.ParamEnv = s.paramEnv(data)
		for j, e := range s.Spec.Container.Env {
			if t, ok := s.env[j]; ok {
				e.Value = exec(t)
			}
			r.Env = append(r.Env, e)
		}
	}
	if s.sceneParams != nil {
		r.SceneParams = map[string]string{}
		for k, t := range s.sceneParams {
			r.SceneParams[k] = exec(t)
		}
	}
	r.GateMessage = exec(s.gateMessage)
	r.AgentSystem = exec(s.agentSystem)
	r.AgentPrompt = exec(s.agentPrompt)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// paramEnv hands a container step every param the Run has a value for as ERGON_PARAM_NAME,
// so that a script reads "$ERGON_PARAM_NAME" and no value is ever pasted into its text. Each
// $ is doubled for the kubelet, which turns $$ back into $ and would expand $(VAR).
func (s *Step) paramEnv(data map[string]any) []corev1.EnvVar {
	values, _ := data[template.KindParams].(map[string]any)
	var env []corev1.EnvVar
	for _, name := range s.params {
		v, ok := values[name]
		if !ok {
			continue
		}
		text, _ := v.(string)
		env = append(env, corev1.EnvVar{Name: SecretParamEnv(name), Value: strings.ReplaceAll(text, "$", "$$")})
	}
	return env
}

// maxAttemptTimeout is the longest timeout a pod can carry (activeDeadlineSeconds is an int32
// number of seconds on the API server).
const maxAttemptTimeout = math.MaxInt32 * time.Second

// attemptBounds refuses retry, timeout and pendingTimeout where nothing would honour them: they
// bound a step's attempts, each a pod, so only container and agent steps have them. A gate is
// bounded by gate.timeout; a scene step's child Run by the called Scene's own steps.
func (c *compiler) attemptBounds(spec *ergonv1alpha1.Step, path *field.Path) {
	kind, instead := "", ""
	switch {
	case spec.Gate != nil:
		kind, instead = "gate", "bound the wait with gate.timeout and gate.onTimeout"
	case spec.Scene != nil:
		kind, instead = "scene", "give the called Scene's steps their own retry and timeout, or the Scene a finally step"
	}
	if kind != "" {
		for _, b := range []struct {
			name string
			set  bool
		}{{"retry", spec.Retry != nil}, {"timeout", spec.Timeout != nil}, {"pendingTimeout", spec.PendingTimeout != nil}} {
			if name := b.name; b.set {
				c.errs = append(c.errs, field.Forbidden(path.Child(name), fmt.Sprintf(
					"a %s step has no attempts or pods for %s to bound: only container and agent steps have it; %s", kind, name, instead)))
			}
		}
		return
	}
	if t := spec.Timeout; t != nil && t.Duration > maxAttemptTimeout {
		c.errs = append(c.errs, field.Invalid(path.Child("timeout"), t.Duration.String(),
			fmt.Sprintf("timeout may be at most %s (about 68 years), the longest a pod's activeDeadlineSeconds can be", maxAttemptTimeout)))
	}
}
