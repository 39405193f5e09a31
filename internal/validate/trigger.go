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
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/schedule"
)

// Trigger checks what a Trigger decides alone: its schedule, its time zone, and
// that its param mappings compile as CEL over the event they read.
func Trigger(spec *ergonv1alpha1.TriggerSpec) field.ErrorList {
	var errs field.ErrorList
	if w := spec.Webhook; w != nil && w.SecretRef.Name == "" && w.SecretRef.Key == "" {
		// The schema requires secretRef, but a mutating webhook's round trip through the Go
		// type writes it back empty: refuse it here as the schema would have.
		errs = append(errs, field.Required(field.NewPath("spec", "webhook", "secretRef"), ""))
	}
	if s := spec.Schedule; s != nil {
		path := field.NewPath("spec", "schedule")
		// The controller's own parser: what it would refuse (a schedule that does not parse,
		// sets a time zone, never fires, or fires within a minute) is refused here first.
		if _, err := schedule.Parse(s.Cron, "", time.UTC); err != nil {
			errs = append(errs, field.Invalid(path.Child("cron"), s.Cron, err.Error()))
		}
		if s.TimeZone != nil {
			if _, err := time.LoadLocation(*s.TimeZone); err != nil {
				errs = append(errs, field.Invalid(path.Child("timeZone"), *s.TimeZone,
					"not a known IANA time zone; use a name such as Europe/Berlin"))
			}
		}
	}
	mappings := func(path *field.Path, params map[string]string, variable string) {
		for _, name := range slices.Sorted(maps.Keys(params)) {
			p := path.Key(name)
			if _, err := expr.CompileMapping(p.String(), params[name], variable); err != nil {
				errs = append(errs, field.Invalid(p, params[name], err.Error()))
			}
		}
	}
	if spec.Webhook != nil {
		mappings(field.NewPath("spec", "webhook", "params"), spec.Webhook.Params, "body")
	}
	if spec.RunCompleted != nil {
		if spec.RunCompleted.SceneRef.Name == spec.SceneRef.Name {
			errs = append(errs, field.Invalid(field.NewPath("spec", "runCompleted", "sceneRef", "name"), spec.RunCompleted.SceneRef.Name,
				"a Trigger that starts a Run of the Scene it waits for would start Runs without end; chain through another Scene"))
		}
		mappings(field.NewPath("spec", "runCompleted", "params"), spec.RunCompleted.Params, "run")
	}
	return errs
}

// TriggerParamsFitScene checks that the params a Trigger gives, its own and its source's
// mappings together, are the Scene's and cover the ones it requires.
func TriggerParamsFitScene(spec *ergonv1alpha1.TriggerSpec, scene *ergonv1alpha1.SceneSpec) field.ErrorList {
	given := map[string]*field.Path{}
	add := func(path *field.Path, params map[string]string) {
		for name := range params {
			given[name] = path.Key(name)
		}
	}
	add(field.NewPath("spec", "params"), spec.Params)
	if spec.Webhook != nil {
		add(field.NewPath("spec", "webhook", "params"), spec.Webhook.Params)
	}
	if spec.RunCompleted != nil {
		add(field.NewPath("spec", "runCompleted", "params"), spec.RunCompleted.Params)
	}
	var errs field.ErrorList
	declared := map[string]bool{}
	for _, p := range scene.Params {
		declared[p.Name] = true
		path, set := given[p.Name]
		switch {
		case set && p.ValueFrom != nil:
			errs = append(errs, field.Forbidden(path, "this param comes from a Secret and cannot be set by a Trigger"))
		case !set && p.ValueFrom == nil && p.Default == nil:
			errs = append(errs, field.Required(field.NewPath("spec", "params").Key(p.Name),
				"the Scene requires this param; set it here or map it from the event"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if !declared[name] {
			errs = append(errs, field.NotSupported(given[name], name, slices.Sorted(maps.Keys(declared))))
		}
	}
	return errs
}
