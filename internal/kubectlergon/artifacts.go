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
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func newArtifactsCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "artifacts RUN",
		Short: "List the artifacts a Run's steps made",
		Long: "List the artifacts a Run's steps made, as its status records them: the step, the attempt, the\n" +
			"name, the size, the media type the step declared and the SHA-256. The files are in the\n" +
			"artifact store (docs/artifacts.md), never in the API server.",
		Example:           "  kubectl ergon artifacts sprint-report-x7k2p",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := o.getRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !writeArtifacts(o.Streams.Out, run) {
				_, _ = fmt.Fprintf(o.Streams.ErrOut, "Run %s has no artifacts.\n", run.Name)
			}
			return nil
		},
	}
}

// writeArtifacts prints a Run's artifacts as a table, in the order of its steps; false when it
// has none.
func writeArtifacts(out io.Writer, run *ergonv1alpha1.Run) bool {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	any := false
	for _, s := range run.Status.Steps {
		for _, a := range s.Artifacts {
			if !any {
				_, _ = fmt.Fprintln(w, "STEP\tATTEMPT\tNAME\tSIZE\tMEDIA TYPE\tSHA256")
				any = true
			}
			mediaType := a.MediaType
			if mediaType == "" {
				mediaType = "-"
			}
			_, _ = fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", s.Name, a.Attempt, a.Name,
				resource.NewQuantity(a.Size, resource.BinarySI).String(), mediaType, a.SHA256)
		}
	}
	_ = w.Flush()
	return any
}
