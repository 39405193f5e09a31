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

package kubectlergon

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	crds "github.com/ergon-dev/ergon/config/crd"
)

// kindSchema is what the API server checks an object of one kind against: the CRD's
// OpenAPI schema of the served version, and its x-kubernetes-validations rules.
type kindSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var (
	schemasOnce sync.Once
	schemas     map[string]*kindSchema // by "version/Kind"
	schemasErr  error
)

// kindSchemas loads the embedded CRDs once.
func kindSchemas() (map[string]*kindSchema, error) {
	schemasOnce.Do(func() { schemas, schemasErr = loadKindSchemas(crds.Bases) })
	return schemas, schemasErr
}

func loadKindSchemas(fsys fs.FS) (map[string]*kindSchema, error) {
	files, err := fs.Glob(fsys, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string]*kindSchema{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			ks, err := newKindSchema(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s, version %s: %w", f, v.Name, err)
			}
			out[v.Name+"/"+crd.Spec.Names.Kind] = ks
		}
	}
	return out, nil
}

func newKindSchema(v1 *apiextensionsv1.JSONSchemaProps) (*kindSchema, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &kindSchema{
		structural: structural,
		validator:  validator,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// validate checks obj, an object as decoded from YAML, as the API server does on create:
// it defaults and prunes obj like the server's decoder, then runs the OpenAPI schema, the
// list-type invariants and, when those leave nothing blocking, the CEL rules with the
// server's cost budget. It returns the fields pruned as unknown and the errors.
func (ks *kindSchema) validate(ctx context.Context, obj map[string]any) (unknown []string, errs field.ErrorList) {
	structuraldefaulting.Default(obj, ks.structural)
	unknown = structuralpruning.PruneWithOptions(obj, ks.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, ks.validator)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ks.structural, obj)...)
	if blocked, err := hasBlockingErr(errs); blocked {
		return unknown, append(errs, err)
	}
	celErrs, _ := ks.cel.Validate(ctx, nil, ks.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return unknown, append(errs, celErrs...)
}

// hasBlockingErr is the API server's rule for skipping CEL rules on an object whose
// schema errors could make them fail for the wrong reason.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong,
			field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}
