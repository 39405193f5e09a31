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

// Command manager runs Ergon's controllers, admission webhooks and webhook Trigger endpoint.
// This file reads flags and wires the parts together; what they do lives in their packages.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	// The manager's image has no zoneinfo; Triggers' time zones come from the binary.
	_ "time/tzdata"

	// Client auth plugins (OIDC, cloud providers) for kubeconfigs outside the cluster.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers"
	archivecontroller "github.com/ergon-dev/ergon/controllers/archive"
	"github.com/ergon-dev/ergon/controllers/census"
	gatecontroller "github.com/ergon-dev/ergon/controllers/gate"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	scenecontroller "github.com/ergon-dev/ergon/controllers/scene"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	workspacecontroller "github.com/ergon-dev/ergon/controllers/workspace"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/hooks"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/tracing"
	"github.com/ergon-dev/ergon/internal/tracing/otlp"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ergonv1alpha1.AddToScheme(scheme))
}

// options are the manager's flags.
type options struct {
	metricsAddr, probeAddr, hooksAddr, archiveURL        string
	archiveRetention                                     string
	archiveKeep                                          int
	metricsCertPath, metricsCertName, metricsCertKey     string
	webhookCertPath, webhookCertName, webhookCertKey     string
	webhookPort                                          int
	leaderElection, secureMetrics, http2, traceContent   bool
	hooksRate                                            float64
	hooksBurst, hooksMaxBodies, hooksMaxBodiesPerTrigger int
	workspaceWorkers, triggerWorkers, gateWorkers        int
	stepBinaries, notificationChannels                   string
	run                                                  runcontroller.RunConfig
	// ledger is the record of Runs started a moment ago that the Run and Trigger
	// controllers and the hooks server share, so each counts the others' too.
	ledger        *cause.Ledger
	webhooks      webhookOptions
	artifacts     artifactOptions
	scale         scaleOptions
	stepResources stepResourceOptions
}

func (o *options) bindFlags() {
	o.webhooks.bindFlags()
	o.artifacts.bindFlags()
	o.scale.bindFlags()
	o.stepResources.bindFlags()
	flag.StringVar(&o.notificationChannels, "notification-channels", "", "A YAML file of the channels Scenes may "+
		"notify when a Run waits for a person (spec.notify.channel): channels [{name, url, keyFile, allowHosts}] and "+
		"consoleURL (docs/human-input.md). None when unset.")
	flag.StringVar(&o.hooksAddr, "hooks-bind-address", ":8090", "The address webhook Triggers are served on "+
		"(POST /hooks/NAMESPACE/TRIGGER, plain HTTP: put TLS in front with an Ingress). Set 0 to disable.")
	flag.Float64Var(&o.hooksRate, "hooks-rate", 10, "Deliveries per second each webhook Trigger accepts on average.")
	flag.IntVar(&o.hooksBurst, "hooks-burst", 20, "Deliveries each webhook Trigger accepts at once.")
	flag.IntVar(&o.hooksMaxBodies, "hooks-max-bodies", hooks.DefaultMaxBodies, "Delivery bodies (up to 1 MiB each) "+
		"read at once over all webhook Triggers, before their signatures are checked; more get 503.")
	flag.IntVar(&o.hooksMaxBodiesPerTrigger, "hooks-max-bodies-per-trigger", hooks.DefaultMaxBodiesPerTrigger,
		"Delivery bodies read at once for one webhook Trigger; more get 429.")
	flag.StringVar(&o.run.EntrypointImage, "entrypoint-image", "ergon/manager:dev",
		"The image step pods copy Ergon's entrypoint from: the manager's own image.")
	flag.StringVar(&o.stepBinaries, "step-binaries", "auto",
		"How step pods get Ergon's entrypoint: image-volume (mount the manager's image, no init container; "+
			"Kubernetes 1.35+ and a runtime with image volumes, such as containerd 2.1), copy (an init container "+
			"copies it; any cluster), or auto (image-volume when the API server is 1.35 or later, else copy).")
	flag.IntVar(&o.run.Slots.Total, "max-step-pods", 100,
		"The most step pods (and child Runs of scene steps) of all Runs this manager reconciles that run at once: "+
			"per shard, so N shards allow N times as many. Free slots go first to the waiting namespace that holds the "+
			"fewest. 0 means no limit.")
	flag.IntVar(&o.run.Slots.PerNamespace, "max-step-pods-per-namespace", 40,
		"The most step pods (and child Runs of scene steps) of the Runs of one namespace that run at once; 0 means no limit.")
	flag.IntVar(&o.run.Slots.PerRun, "max-step-pods-per-run", 20,
		"The most step pods (and child Runs of scene steps) of one Run that run at once; a Scene's parallelism and a "+
			"forEach's parallelism apply within it. 0 means no limit.")
	flag.IntVar(&o.run.Workers, "run-workers", 4, "How many Runs are reconciled at once.")
	flag.IntVar(&o.workspaceWorkers, "workspace-workers", 2, "How many Workspaces are reconciled at once.")
	flag.IntVar(&o.triggerWorkers, "trigger-workers", 4, "How many Triggers are reconciled at once "+
		"(Triggers due at the same minute start their Runs side by side).")
	flag.IntVar(&o.gateWorkers, "gate-workers", 4, "How many Gates are reconciled at once.")
	flag.IntVar(&o.run.Limits.UnitsPerStep, "max-units-per-step", planner.DefaultLimits.UnitsPerStep,
		"The most units (fan-out instances times loop iterations, retries not counted) one step makes; "+
			"a step that would make more fails with reason UnitLimitReached. 0 means no limit.")
	flag.Int64Var(&o.run.Limits.StepOutputBytes, "max-step-output-bytes", planner.DefaultLimits.StepOutputBytes,
		"The most bytes of outputs (and transcripts) one step keeps in ConfigMaps, its instances' and iterations' "+
			"included; an output that would pass it is not kept and its step fails with reason OutputTooLarge. 0 means no limit.")
	flag.Int64Var(&o.run.Limits.RunOutputBytes, "max-run-output-bytes", planner.DefaultLimits.RunOutputBytes,
		"The most bytes of outputs (and transcripts) one Run keeps in ConfigMaps; an output that would pass it is not kept "+
			"and its step fails with reason OutputTooLarge. 0 means no limit.")
	flag.IntVar(&o.run.Limits.ConfigMapsPerRun, "max-configmaps-per-run", planner.DefaultLimits.ConfigMapsPerRun,
		"The most ConfigMaps one Run creates to keep outputs; an output that would need one more is not kept and its step "+
			"fails with reason ConfigMapLimitReached. 0 means no limit.")
	flag.IntVar(&o.run.MaxDepth, "max-cause-depth", cause.DefaultMaxDepth, "How deep Runs may nest in their cause: "+
		"each sub-scene or Scene tool Run is one deeper than its parent, each Run a runCompleted Trigger starts one "+
		"deeper than the Run whose end started it. A step past it fails DepthExceeded; a Trigger starts nothing.")
	flag.IntVar(&o.run.MaxDepth, "max-scene-depth", cause.DefaultMaxDepth, "The old name of --max-cause-depth.")
	flag.IntVar(&o.run.Causes.MaxCaused, "max-caused-runs", cause.DefaultMaxCaused, "The most Runs one root Run (one "+
		"a person created, or one a Trigger started from a schedule or delivery) may cause, through sub-scenes, Scene "+
		"tools and runCompleted Triggers together.")
	flag.IntVar(&o.run.Causes.MaxChildren, "max-child-runs", cause.DefaultMaxChildren, "The most child Runs one Run "+
		"may create (scene steps, their fan-out and loop units, Scene tool calls).")
	flag.IntVar(&o.run.Causes.MaxPerMinute, "max-trigger-runs-per-minute", cause.DefaultMaxPerMinute, "The most Runs one "+
		"Trigger may start in any minute, from its schedule, webhook deliveries (429 beyond) or runCompleted chains.")
	flag.DurationVar(&o.run.PendingTimeout, "pending-timeout", 10*time.Minute,
		"How long a step attempt's pod may take to start (be scheduled, pull its images, find its Secrets) "+
			"when its step and Scene set no pendingTimeout, and how long a Run waits for its Scene to exist; 0 means no bound.")
	flag.DurationVar(&o.run.StatusInterval, "status-interval", time.Second,
		"The shortest time between two status writes of one Run that only record what its step pods did "+
			"(a fan-out's pods starting and ending in a burst become one write per interval); a change that "+
			"starts or stops something is written at once. 0 writes every change at once.")
	flag.DurationVar(&o.run.EventInterval, "event-interval", 10*time.Second,
		"The shortest time between two progress Events of one Run (steps started and succeeded): progress that "+
			"comes sooner is told, folded into one Event, with the next, before the Run's next other Event, or with "+
			"the Run's end. Failures, skips, waits and retries are told at once. 0 tells each change at once.")
	flag.StringVar(&o.archiveURL, "archive-url", os.Getenv("ERGON_ARCHIVE_URL"), "Where Runs that ended are archived "+
		"(docs/archive.md): sqlite:///PATH (one manager only) or postgres://...; $ERGON_ARCHIVE_URL by default, so that "+
		"a password comes from a Secret. Empty archives nothing.")
	flag.DurationVar(&o.run.ArchiveWait, "archive-wait", archivecontroller.DefaultArchiveGiveUpAfter, "How long a deleted Run "+
		"waits to be archived, and a finished Run's pods wait for its record, before they go without it.")
	flag.StringVar(&o.archiveRetention, "archive-retention", "90d", "How long archived Runs are kept after they finished: "+
		"a duration (2160h), days (90d) or forever; a Namespace's annotation "+archivecontroller.AnnotationArchiveRetention+" overrides it.")
	flag.IntVar(&o.archiveKeep, "archive-keep", 0, "At most this many archived Runs kept per namespace, the newest; 0 keeps any "+
		"number; a Namespace's annotation "+archivecontroller.AnnotationArchiveKeep+" overrides it.")
	flag.BoolVar(&o.traceContent, "trace-content", false, "Export what agents were told and answered (prompts, "+
		"completions, tool results) in traces. Off by default: they may hold personal data or secrets. Traces are "+
		"exported only when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.")
	flag.BoolVar(&o.run.KeepFailedPods, "keep-failed-pods", false,
		"Keep the pods of failed step attempts for debugging instead of deleting them.")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&o.leaderElection, "leader-elect", false,
		"Enable leader election for controller manager. "+
			"Enabling this will ensure there is only one active controller manager.")
	flag.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.StringVar(&o.webhookCertPath, "webhook-cert-path", "", "The directory that contains the webhook certificate.")
	flag.StringVar(&o.webhookCertName, "webhook-cert-name", "tls.crt", "The name of the webhook certificate file.")
	flag.StringVar(&o.webhookCertKey, "webhook-cert-key", "tls.key", "The name of the webhook key file.")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the webhook server listens on. "+
		"Defaults to 9443. Set -1 to disable the webhook server.")
	flag.StringVar(&o.metricsCertPath, "metrics-cert-path", "",
		"The directory that contains the metrics server certificate.")
	flag.StringVar(&o.metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	flag.StringVar(&o.metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	flag.BoolVar(&o.http2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics and webhook servers")
}

func main() {
	var o options
	o.bindFlags()
	// Production logging (JSON, info level) unless --zap-devel.
	logOpts := zap.Options{}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))

	if err := run(&o); err != nil {
		setupLog.Error(err, "The manager failed")
		os.Exit(1)
	}
}

func run(o *options) error {
	if l := o.run.Slots; l.Total < 0 || l.PerNamespace < 0 || l.PerRun < 0 {
		return errors.New("--max-step-pods, --max-step-pods-per-namespace and --max-step-pods-per-run must be 0 (no limit) or more")
	}
	for name, v := range map[string]int{"--max-cause-depth": o.run.MaxDepth, "--max-caused-runs": o.run.Causes.MaxCaused,
		"--max-child-runs": o.run.Causes.MaxChildren, "--max-trigger-runs-per-minute": o.run.Causes.MaxPerMinute} {
		if v < 1 {
			return fmt.Errorf("%s is %d; it must be at least 1 (no limit is unbounded)", name, v)
		}
	}
	o.ledger = &cause.Ledger{}
	var tlsOpts []func(*tls.Config)
	if !o.http2 {
		// HTTP/2 Stream Cancellation and Rapid Reset (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8).
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	webhookTLS := tlsOpts
	if o.archiveURL != "" {
		// The API server's aggregator proves itself with a client certificate, which the
		// archive's API verifies (internal/archiveapi); admission requests send none.
		webhookTLS = append(slices.Clone(tlsOpts), func(c *tls.Config) { c.ClientAuth = tls.RequestClientCert })
	}
	webhookServer := webhook.NewServer(webhook.Options{TLSOpts: webhookTLS, Port: o.webhookPort,
		CertDir: o.webhookCertPath, CertName: o.webhookCertName, KeyName: o.webhookCertKey})
	metricsServer := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts,
		CertDir: o.metricsCertPath, CertName: o.metricsCertName, KeyName: o.metricsCertKey}
	if o.secureMetrics {
		// Only callers RBAC allows to get /metrics read it.
		metricsServer.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	restConfig := ctrl.GetConfigOrDie()
	mgrOptions := ctrl.Options{
		Scheme: scheme,
		// Ergon watches only the pods and ConfigMaps it made, not every one in the cluster.
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsServer,
		WebhookServer:          webhookServer,
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElection,
	}
	if err := o.scale.apply(&mgrOptions); err != nil {
		return err
	}
	setupLog.Info("Sharding", "shard", o.scale.shard.String(), "lease", mgrOptions.LeaderElectionID)
	mgr, err := ctrl.NewManager(restConfig, mgrOptions)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := o.stepResources.apply(&o.run); err != nil {
		return err
	}
	if o.run.StepBinaries, err = stepBinaries(restConfig, o.stepBinaries); err != nil {
		return err
	}
	setupLog.Info("Step pods get Ergon's entrypoint", "by", o.run.StepBinaries)
	if o.archiveURL != "" {
		kind := archive.Kind(o.archiveURL)
		if kind == "" {
			return fmt.Errorf("--archive-url: want sqlite:///PATH or postgres://, not %q", strings.SplitN(o.archiveURL, ":", 2)[0])
		}
		if kind == archive.KindSQLite && o.scale.shard.Count > 1 {
			return errors.New("--archive-url: SQLite keeps the archive for one manager; with --shards above 1 use PostgreSQL")
		}
		o.webhooks.archive = archive.Lazy(o.archiveURL)
	}
	metrics.Registry.MustRegister(collectors()...)
	if err := setupTraces(mgr, o); err != nil {
		return err
	}
	// The webhook server reads its certificate from --webhook-cert-path, or from
	// controller-runtime's default directory, where the rotator then writes it.
	o.webhooks.certDir = o.webhookCertPath
	if o.webhooks.certDir == "" {
		o.webhooks.certDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if err := setupControllers(mgr, restConfig, o); err != nil {
		return err
	}
	if o.hooksAddr != "0" {
		if o.hooksRate <= 0 || o.hooksBurst < 1 || o.hooksMaxBodies < 1 || o.hooksMaxBodiesPerTrigger < 1 {
			return errors.New("--hooks-rate must be above 0, and --hooks-burst, --hooks-max-bodies and " +
				"--hooks-max-bodies-per-trigger at least 1, or every delivery is refused")
		}
		// Secrets are read directly, never cached: the manager needs only the few that sign
		// webhooks, and a cache of every Secret in the cluster would cost memory and RBAC.
		if err := mgr.Add(&hooks.Server{
			Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Clock: clock.RealClock{},
			Addr: o.hooksAddr, Rate: rate.Limit(o.hooksRate), Burst: o.hooksBurst,
			MaxBodies: o.hooksMaxBodies, MaxBodiesPerTrigger: o.hooksMaxBodiesPerTrigger,
			Limits: o.run.CauseLimits(), Ledger: o.ledger,
		}); err != nil {
			return fmt.Errorf("setting up the webhook Trigger endpoint: %w", err)
		}
	}
	if err := o.webhooks.setup(mgr); err != nil {
		return fmt.Errorf("setting up the admission webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhooks", o.webhooks.readyz(mgr)); err != nil {
		return err
	}
	setupLog.Info("Starting manager")
	return mgr.Start(ctrl.SetupSignalHandler())
}

// noController stands in for a controller that is off.
type noController struct{}

func (noController) SetupWithManager(ctrl.Manager) error { return nil }

// collectors are the metrics of the manager's parts outside controllers/ and webhook/, whose
// packages register their own: the trace exporter's and the webhook Trigger endpoint's. All
// are registered whether those parts are on or not, at zero (metrics_test.go reads them all).
func collectors() []prometheus.Collector {
	return append(otlp.Collectors(), hooks.Collectors()...)
}

// setupTraces exports a trace of every Run when the standard OpenTelemetry variables name an
// endpoint (internal/tracing).
func setupTraces(mgr ctrl.Manager, o *options) error {
	_, version, _ := strings.Cut(o.run.EntrypointImage, ":")
	traces, err := otlp.FromEnvironment(context.Background(),
		otlp.Options{Content: o.traceContent, Version: version, Log: ctrl.Log.WithName("traces")})
	if err != nil || traces == nil {
		return err
	}
	setupLog.Info("Exporting traces", "semconv", tracing.SemconvVersion, "content", o.traceContent)
	o.run.Traces = traces
	return mgr.Add(traces)
}

// stepBinaries resolves --step-binaries, asking the API server its version for auto.
func stepBinaries(restConfig *rest.Config, mode string) (runcontroller.StepBinaries, error) {
	version := ""
	if mode == "auto" {
		dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
		if err != nil {
			return "", fmt.Errorf("creating a discovery client: %w", err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("asking the API server its version for --step-binaries=auto: %w", err)
		}
		version = v.GitVersion
	}
	return runcontroller.ResolveStepBinaries(mode, version)
}

// setupControllers registers the Run, Gate, Scene, Trigger and Workspace controllers, each
// with its number of workers.
func setupControllers(mgr ctrl.Manager, restConfig *rest.Config, o *options) error {
	runConfig := o.run
	runConfig.Shard = o.scale.shard
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating a clientset: %w", err)
	}
	notifier, err := notifications(mgr, o.notificationChannels)
	if err != nil {
		return fmt.Errorf("--notification-channels: %w", err)
	}
	if runConfig.Artifacts, err = o.artifacts.config(&o.webhooks); err != nil {
		return err
	}
	runs := &runcontroller.RunReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-run"), Clock: clock.RealClock{},
		Logs: runcontroller.KubeletLogs{Clientset: clientset}, Config: runConfig, Ledger: o.ledger, Notifier: notifier,
		Archive: o.webhooks.archive}
	if err := o.artifacts.setup(context.Background(), mgr, &o.webhooks, runs, o.scale.shard); err != nil {
		return fmt.Errorf("--artifact-store: %w", err)
	}
	var archiver interface{ SetupWithManager(ctrl.Manager) error } = noController{}
	if store := o.webhooks.archive; store != nil {
		runConfig.Archive = true
		setupLog.Info("Runs that end are archived", "store", store.Kind())
		archiver = &archivecontroller.ArchiveReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("ergon-archive"), Clock: clock.RealClock{},
			Logs: runcontroller.KubeletLogs{Clientset: clientset}, Store: store,
			Config: archivecontroller.ArchiveConfig{GiveUpAfter: o.run.ArchiveWait}}
		retention, forever, err := archivecontroller.ParseRetention(o.archiveRetention)
		if err != nil {
			return fmt.Errorf("--archive-retention: %w", err)
		}
		if forever {
			retention = 0
		}
		if o.archiveKeep < 0 {
			return errors.New("--archive-keep: want 0 (any number) or more")
		}
		if err := mgr.Add(&archivecontroller.ArchivePruner{Store: store, Reader: mgr.GetAPIReader(), Clock: clock.RealClock{},
			Retention: retention, Keep: o.archiveKeep, Shard: o.scale.shard}); err != nil {
			return err
		}
	}
	if err := mgr.Add(&census.Census{Reader: mgr.GetCache(), Shard: o.scale.shard, Clock: clock.RealClock{}}); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		r    interface{ SetupWithManager(ctrl.Manager) error }
	}{
		{"Run", runs},
		{"Gate", &gatecontroller.GateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-gate"),
			Clock: clock.RealClock{}, Options: controller.Options{MaxConcurrentReconciles: o.gateWorkers}}},
		{"Scene", &scenecontroller.SceneReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-scene"),
			Clock: clock.RealClock{}}},
		{"Trigger", &triggercontroller.TriggerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("ergon-trigger"), Clock: clock.RealClock{},
			Limits: runConfig.CauseLimits(), Ledger: o.ledger, Archive: runConfig.Archive,
			Options: controller.Options{MaxConcurrentReconciles: o.triggerWorkers}}},
		{"Archive", archiver},
		{"Workspace", &workspacecontroller.WorkspaceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("ergon-workspace"), Clock: clock.RealClock{},
			EntrypointImage: runConfig.EntrypointImage, Workers: o.workspaceWorkers,
			ArtifactEndpoint: o.artifacts.workspaceEndpoint(o.webhooks.namespace, o.webhookPort)}},
		{"WorkspacePool", &workspacecontroller.WorkspacePoolReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("ergon-workspacepool"), Clock: clock.RealClock{},
			EntrypointImage: runConfig.EntrypointImage}},
	} {
		if err := c.r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("creating the %s controller: %w", c.name, err)
		}
	}
	return nil
}
