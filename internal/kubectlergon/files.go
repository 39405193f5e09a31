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
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ergon-dev/ergon/internal/workspace/browse"
)

// newFilesCommand reads a Workspace's files through the API server as the user: pods/exec of
// the entrypoint's read-only files command in the Workspace's pod (internal/workspace/browse),
// so RBAC decides who may, and the Workspace's deny-all ingress policy does not stand in the way.
func newFilesCommand(o *Options) *cobra.Command {
	var wake time.Duration
	cmd := &cobra.Command{
		Use:   "files",
		Short: "List and read a Workspace's files",
		Long: "List a directory of a Workspace or print one of its files, with your own identity: it needs\n" +
			"get on the Workspace and create on pods/exec of its pod (and patch on the Workspace, to wake\n" +
			"an Idle one with --wake). Paths are relative to /workspace and cannot leave it.",
	}
	cmd.PersistentFlags().DurationVar(&wake, "wake", 0,
		"when the Workspace is Idle, wake it and wait this long for its pod (needs patch on workspaces)")
	// files is a browse client acting as the user, and the namespace to read in.
	files := func() (*browse.Client, string, error) {
		ns, err := o.Namespace()
		if err != nil {
			return nil, "", err
		}
		cfg, err := o.restConfig()
		if err != nil {
			return nil, "", err
		}
		c, err := browse.New(cfg)
		if err != nil {
			return nil, "", err
		}
		c.Wake = wake
		return c, ns, nil
	}
	ls := &cobra.Command{
		Use:               "ls WORKSPACE [PATH]",
		Short:             "List a directory of a Workspace",
		Example:           "  kubectl ergon files ls alice-desk reports/",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeNames(o, "workspaces"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := files()
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			entries, err := c.List(cmd.Context(), ns, args[0], dir)
			if err != nil {
				return explainIdle(err)
			}
			w := tabwriter.NewWriter(o.Streams.Out, 0, 8, 3, ' ', 0)
			_, _ = fmt.Fprintln(w, "NAME\tTYPE\tSIZE\tMODIFIED")
			for _, e := range entries {
				_, _ = fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", e.Name, e.Type, e.Size, e.ModTime.UTC().Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
	cat := &cobra.Command{
		Use:               "cat WORKSPACE PATH",
		Short:             "Print a file of a Workspace, byte for byte",
		Example:           "  kubectl ergon files cat alice-desk reports/summary.md > summary.md",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeNames(o, "workspaces"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := files()
			if err != nil {
				return err
			}
			return explainIdle(c.Read(cmd.Context(), ns, args[0], args[1], o.Streams.Out))
		},
	}
	cmd.AddCommand(ls, cat)
	return cmd
}

// explainIdle says how to read an Idle Workspace's files.
func explainIdle(err error) error {
	if err != nil && errors.Is(err, browse.ErrNotRunning) {
		return fmt.Errorf("%w; add --wake 2m to start it and wait for its pod", err)
	}
	return err
}
