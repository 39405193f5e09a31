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
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Version is the plugin's version, set at build time with
// -ldflags "-X github.com/ergon-dev/ergon/internal/kubectlergon.Version=v0.1.0".
var Version = ""

// ClientVersion is Version, or the module version Go recorded when it is not set.
func ClientVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// isManager tells the manager's Deployment among Ergon's: the chart labels it with the
// component, kustomize (config/manager) with control-plane.
func isManager(d *appsv1.Deployment) bool {
	return d.Labels["app.kubernetes.io/component"] == "manager" || d.Labels["control-plane"] == "controller-manager"
}

func newVersionCommand(o *Options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and, when reachable, the manager's",
		Long: "Print the plugin's version and the manager's: the image of the manager's Deployment and its\n" +
			"app.kubernetes.io/version label, found by its labels in any namespace you may list.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _ = fmt.Fprintf(o.Streams.Out, "Client Version: %s\n", ClientVersion())
			if clientOnly {
				return nil
			}
			_, _ = fmt.Fprintf(o.Streams.Out, "Manager Version: %s\n", o.managerVersion(cmd.Context()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version only")
	return cmd
}

func (o *Options) managerVersion(ctx context.Context) string {
	c, err := o.Client()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/name": "ergon"}); err != nil {
		return "unknown (" + firstLine(err.Error(), 120) + ")"
	}
	var found []string
	for _, d := range list.Items {
		if isManager(&d) {
			found = append(found, ManagerVersion(&d))
		}
	}
	if len(found) == 0 {
		return "unknown (no manager Deployment found)"
	}
	return strings.Join(found, "; ")
}

// ManagerVersion describes a manager Deployment: its version label, image and namespace.
func ManagerVersion(d *appsv1.Deployment) string {
	image := ""
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" || image == "" {
			image = c.Image
		}
	}
	v := d.Labels["app.kubernetes.io/version"]
	if v == "" {
		if i := strings.LastIndexAny(image, ":@"); i > 0 && !strings.Contains(image[i:], "/") {
			v = image[i+1:]
		}
	}
	return fmt.Sprintf("%s (image %s, Deployment %s/%s, %d/%d ready)", orNone(v), image, d.Namespace, d.Name,
		d.Status.ReadyReplicas, d.Status.Replicas)
}
