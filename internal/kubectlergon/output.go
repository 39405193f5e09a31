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

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
)

func newOutputCommand(o *Options) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "output RUN STEP",
		Short: "Print a step's whole output, byte for byte",
		Long: "Print a step's whole output exactly as the step wrote it, from the ConfigMap the Run keeps it\n" +
			"in (or from the status when it is small), checked against the size and SHA-256 the status\n" +
			"records. Nothing is added, not even a newline: pipe it where it is needed.",
		Example:           "  kubectl ergon output sprint-report-x7k2p summarize > summary.md",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeRunAndStep(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := o.getRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			s, err := findStep(run, args[1])
			if err != nil {
				return err
			}
			if s.Output == nil {
				return fmt.Errorf("step %s of Run %s has no output (it is %s)", s.Name, run.Name, s.Phase)
			}
			b, err := o.readValue(cmd.Context(), run.Namespace, s.Output, key)
			if err != nil {
				return err
			}
			_, err = o.Streams.Out.Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "read this key of the output's ConfigMap instead of the one the status names")
	return cmd
}

// readValue reads an output or transcript with outputs.Read. A key that names another key of
// the ConfigMap than the status does (--key) is read as it is: the status records no size or
// digest to check it against.
func (o *Options) readValue(ctx context.Context, namespace string, v *ergonv1alpha1.OutputValue, key string) ([]byte, error) {
	if v.Ref == nil && key != "" {
		return nil, fmt.Errorf("this output is kept whole in the Run's status; it has no ConfigMap to read --key %s from", key)
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	if key == "" || key == v.Ref.Key {
		return outputs.Read(ctx, c, namespace, v)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: v.Ref.ConfigMap}, cm); err != nil {
		return nil, err
	}
	value, ok := outputs.ConfigMapValue(cm, key)
	if !ok {
		return nil, fmt.Errorf("the ConfigMap %s has no key %q", cm.Name, key)
	}
	return []byte(value), nil
}
