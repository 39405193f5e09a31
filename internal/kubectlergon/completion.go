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
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Shell completion is cobra's (kubectl ergon completion bash|zsh|fish|powershell); these
// complete resource names, step names and Scene params by asking the API server.

func (o *Options) listNames(cmd *cobra.Command, list client.ObjectList, keep func(client.Object) bool) []string {
	c, ns, err := o.clientIn()
	if err != nil {
		return nil
	}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return nil
	}
	objs, _ := meta.ExtractList(list)
	var names []string
	for _, obj := range objs {
		co := obj.(client.Object)
		if keep == nil || keep(co) {
			names = append(names, co.GetName())
		}
	}
	return names
}

// completeNames completes the first argument with names of a kind ("runs", "scenes", ...).
func completeNames(o *Options, plural string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		k, err := KindOf(plural)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.listNames(cmd, k.newList(), nil), cobra.ShellCompDirectiveNoFileComp
	}
}

// completePendingGates completes Gates waiting for a decision.
func completePendingGates(o *Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.listNames(cmd, &ergonv1alpha1.GateList{}, func(obj client.Object) bool {
			g := obj.(*ergonv1alpha1.Gate)
			return g.Spec.Decision == nil && g.Status.Phase.Open()
		}), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunAndStep completes a Run, then one of its steps.
func completeRunAndStep(o *Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return completeNames(o, "runs")(cmd, args, toComplete)
		case 1:
			run, err := o.getRun(cmd.Context(), args[0])
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var steps []string
			for _, s := range run.Status.Steps {
				steps = append(steps, s.Name)
			}
			return steps, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeParams completes -p with the params of the Scene named first, as NAME=.
func completeParams(o *Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 || strings.Contains(toComplete, "=") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, ns, err := o.clientIn()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		scene := &ergonv1alpha1.Scene{}
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, scene); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var params []string
		for _, p := range scene.Spec.Params {
			if p.ValueFrom == nil {
				params = append(params, p.Name+"=\t"+firstLine(p.Description, 60))
			}
		}
		return params, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// registerNamespaceCompletion completes -n with the namespaces the user may list.
func registerNamespaceCompletion(root *cobra.Command, o *Options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, err := o.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := &corev1.NamespaceList{}
		if err := c.List(cmd.Context(), list); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
