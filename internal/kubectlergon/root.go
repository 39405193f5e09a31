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

// Package kubectlergon is the kubectl plugin kubectl-ergon: start, follow, inspect and decide
// Ergon Runs from a terminal. It talks only to the API server, with the user's own
// credentials, through the usual kubectl flags (genericclioptions).
package kubectlergon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
)

// Words used in several places.
const (
	optionApprove = gatepolicy.OptionApprove
	optionReject  = gatepolicy.OptionReject
	pluralGates   = "gates"
	none          = "<none>"
	columnAge     = "AGE"
	columnName    = "NAME"
	columnPhase   = "PHASE"
	wordScene     = "scene"
	wordTrigger   = "trigger"
	formatJSON    = "json"
	formatYAML    = "yaml"
)

// Exit codes of run --follow, and of every command that fails.
const (
	ExitSucceeded = 0
	// ExitFailed is a Failed Run, and any error of the plugin itself (as kubectl's 1).
	ExitFailed = 1
	// ExitIncomplete is a Cancelled Run, or a wait that timed out.
	ExitIncomplete = 2
)

// ExitError ends the plugin with a code; its message, when not empty, was not printed yet.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string { return e.Message }

// ExitCode is the process exit code for the error a command returned.
func ExitCode(err error) int {
	var e *ExitError
	switch {
	case err == nil:
		return ExitSucceeded
	case errors.As(err, &e):
		return e.Code
	}
	return ExitFailed
}

// LogSource reads a container log of a pod. The default reads pods/log from the API server.
type LogSource interface {
	Log(ctx context.Context, namespace, pod string, follow bool, tailLines *int64) (io.ReadCloser, error)
}

// Options are what every command shares: the kubectl flags, the streams and the clients.
type Options struct {
	Flags   *genericclioptions.ConfigFlags
	Streams genericiooptions.IOStreams
	// Logs overrides the log source; tests set it where no kubelet serves logs.
	Logs LogSource
	// NewClient overrides how the client is built; nil builds it from Flags.
	NewClient func() (client.WithWatch, error)
	// Now tells the time; time.Now when nil.
	Now func() time.Time
	// Terminal reports whether Out is a terminal, for colour; detected when nil.
	Terminal func() bool

	cfg *rest.Config
	c   client.WithWatch
}

// Scheme knows the types the plugin reads and writes.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := ergonv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (o *Options) restConfig() (*rest.Config, error) {
	if o.cfg == nil {
		cfg, err := o.Flags.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		o.cfg = cfg
	}
	return o.cfg, nil
}

// clientIn is Client and the namespace the command works in.
func (o *Options) clientIn() (client.WithWatch, string, error) {
	c, err := o.Client()
	if err != nil {
		return nil, "", err
	}
	ns, err := o.Namespace()
	return c, ns, err
}

// Client is a client without a cache, acting as the user.
func (o *Options) Client() (client.WithWatch, error) {
	if o.c != nil {
		return o.c, nil
	}
	if o.NewClient != nil {
		c, err := o.NewClient()
		o.c = c
		return c, err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, err
	}
	o.c = c
	return c, nil
}

// Namespace is the namespace of -n, or of the kubeconfig context.
func (o *Options) Namespace() (string, error) {
	ns, _, err := o.Flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) terminal() bool {
	if o.Terminal != nil {
		return o.Terminal()
	}
	f, ok := o.Streams.Out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("NO_COLOR") == ""
}

// NewCommand is the root command, kubectl-ergon.
func NewCommand(o *Options) *cobra.Command {
	if o.Flags == nil {
		o.Flags = genericclioptions.NewConfigFlags(true)
	}
	root := &cobra.Command{
		Use:   "kubectl-ergon",
		Short: "Run, follow, inspect and decide Ergon Scenes, Runs and Gates",
		Long: "kubectl ergon starts Runs of Scenes and follows them, shows a Run as a tree, reads step logs,\n" +
			"outputs and agent transcripts, decides Gates and lints Scenes offline. It talks only to the\n" +
			"API server, with your own credentials and the usual kubectl flags.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl ergon",
		},
	}
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	o.Flags.AddFlags(root.PersistentFlags())
	registerNamespaceCompletion(root, o)
	root.AddCommand(
		newRunCommand(o), newGetCommand(o), newTreeCommand(o), newLogsCommand(o), newOutputCommand(o), newArtifactsCommand(o),
		newDecideCommand(o, optionApprove), newDecideCommand(o, optionReject), newGatesCommand(o),
		newAnswerCommand(o), newInboxCommand(o),
		newCancelCommand(o), newRerunCommand(o), newRetryCommand(o), newHistoryCommand(o), newDiffCommand(o),
		newTriggerCommand(o),
		newSuspendCommand(o, true), newSuspendCommand(o, false),
		newFilesCommand(o), newLintCommand(o), newVersionCommand(o),
	)
	return root
}

// Main runs the plugin with args and returns the process exit code.
func Main(ctx context.Context, o *Options, args []string) int {
	cmd := NewCommand(o)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && err.Error() != "" {
		_, _ = fmt.Fprintln(o.Streams.ErrOut, "error:", err)
	}
	return ExitCode(err)
}
