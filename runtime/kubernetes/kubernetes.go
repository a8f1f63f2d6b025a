// Package kubernetes runs units as pods in one namespace of a Kubernetes
// cluster, through client-go. A unit is:
//
//   - a Secret named Name(id): the unit's files and environment values
//     while it runs; once it has ended, its final state (annotations
//     cairn.dev/phase, exit-code, reason, started, ended) and its log (key
//     "log"), which outlive the pod until Remove;
//   - a Pod of the same name: one container running the unit's argv in its
//     image, the files mounted read-only from the Secret into an emptyDir
//     workspace, as a non-root user without privileges or capabilities,
//     without a service account token.
//
// Both carry the labels cairn.dev/unit, cairn.dev/owner-kind and
// cairn.dev/owner. The Secret is created first and is what makes an ID
// taken: a repeated Start (after a crash, or by a new leader) finds it and
// returns ErrExists, so a unit is never started twice. The state is read
// from the cluster through informers, so a new Runtime finds every unit
// again: ended ones with their real exit code, pods that vanished as Lost.
//
// The image comes from what the unit runs for (describe.go): a Brigade
// worker's Project (workerTemplate.image), a job's image, or a container
// deploy item's config.image, else Options.DefaultImage. The Role the runtime needs is in
// docs/kubernetes-runtime.md; Ready reports a missing permission by name.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options configures a Runtime.
type Options struct {
	// Config reaches the cluster (clientcmd builds it from a kubeconfig);
	// required.
	Config *rest.Config
	// Namespace is where units' pods and secrets go; required.
	Namespace string
	// KillGrace is the pods' termination grace period: Kill deletes a pod
	// with it, and deletes it at once when it is still there after it;
	// default 10s.
	KillGrace time.Duration
	// RunAsUser is the uid (and gid) units run as; default 65532.
	RunAsUser int64
	// Defaults are the requests and limits of units that set none; default
	// requests cpu 100m, memory 128Mi, limit memory 1Gi.
	Defaults corev1.ResourceRequirements
	// MaxLogBytes bounds the log kept once a unit has ended (its end);
	// default 768 KiB (a Secret holds at most 1 MiB).
	MaxLogBytes int
	// RetryInterval is how often an unready runtime checks the cluster
	// again; default 2s.
	RetryInterval time.Duration
	// Logger receives what the runtime does; default: discarded. It never
	// receives environment values or file contents.
	Logger *slog.Logger
	// DefaultImage is the image of units that name none (a Project's
	// workerTemplate.image, a job's image, a container deploy item's
	// config.image): one image holding what the commands call (sh, curl,
	// ...) lets workers, jobs and deploy items written for the local
	// runtime run unchanged. Empty: such a unit fails to start, saying
	// where to set one.
	DefaultImage string
}

// DefaultRole is the file that documents the Role the runtime needs.
const DefaultRole = "docs/kubernetes-runtime.md"

// ErrNotReady: the runtime has not reached the cluster yet (or lacks a
// permission); the wrapped message says why.
var ErrNotReady = errors.New("runtime kubernetes: not ready")

// Runtime runs units as pods. Create it with New; it is safe for
// concurrent use.
type Runtime struct {
	opts    Options
	pod     podOptions
	log     *slog.Logger
	cs      kubernetes.Interface
	pods    listersv1.PodNamespaceLister
	secrets listersv1.SecretNamespaceLister
	stop    chan struct{} // closed by Close: informers stop
	synced  chan struct{} // closed once ready

	mu        sync.Mutex
	notReady  error           // why not ready; nil once ready
	changed   chan struct{}   // closed and replaced on every change seen
	finishing map[string]bool // units whose end is being recorded
	starting  map[string]bool // units whose objects Start is creating
	closed    bool
}

// New returns a Runtime over opts.Config and starts watching the
// namespace. It does not wait for the cluster: until the cluster answers
// and grants every permission the runtime needs, Ready says why not and
// the other methods wait for it (until their ctx ends). Errors: a missing
// Config or Namespace, a Config client-go refuses.
func New(opts Options) (*Runtime, error) {
	if opts.Config == nil {
		return nil, errors.New("runtime kubernetes: a kubeconfig is required (--runtime-kubeconfig)")
	}
	if opts.Namespace == "" {
		return nil, errors.New("runtime kubernetes: a namespace is required (--runtime-namespace)")
	}
	setDefaults(&opts)
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("runtime kubernetes: %w", err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelUnit }))
	r := &Runtime{opts: opts, log: opts.Logger, cs: cs,
		pod: podOptions{Namespace: opts.Namespace, RunAsUser: opts.RunAsUser,
			GracePeriod: int64((opts.KillGrace + time.Second - 1) / time.Second), Defaults: opts.Defaults},
		stop: make(chan struct{}), synced: make(chan struct{}), changed: make(chan struct{}),
		finishing: map[string]bool{}, starting: map[string]bool{},
		notReady: fmt.Errorf("%w: connecting to %s", ErrNotReady, opts.Config.Host)}
	pi, si := f.Core().V1().Pods(), f.Core().V1().Secrets()
	r.pods, r.secrets = pi.Lister().Pods(opts.Namespace), si.Lister().Secrets(opts.Namespace)
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.notify() },
		UpdateFunc: func(any, any) { r.notify() },
		DeleteFunc: func(any) { r.notify() },
	}
	if _, err := pi.Informer().AddEventHandler(h); err != nil {
		return nil, fmt.Errorf("runtime kubernetes: %w", err)
	}
	if _, err := si.Informer().AddEventHandler(h); err != nil {
		return nil, fmt.Errorf("runtime kubernetes: %w", err)
	}
	go r.connect(f, pi.Informer(), si.Informer())
	return r, nil
}

func setDefaults(o *Options) {
	if o.KillGrace <= 0 {
		o.KillGrace = 10 * time.Second
	}
	if o.RunAsUser == 0 {
		o.RunAsUser = 65532
	}
	if o.Defaults.Requests == nil && o.Defaults.Limits == nil {
		o.Defaults = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = 768 << 10
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// connect checks the permissions until they are all granted, then starts
// the informers and waits for their caches; then the runtime is ready.
func (r *Runtime) connect(f informers.SharedInformerFactory, infs ...cache.SharedIndexInformer) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	for {
		err := checkAccess(ctx, r.cs, r.opts.Namespace)
		if err == nil {
			break
		}
		r.setNotReady(err)
		select {
		case <-r.stop:
			return
		case <-time.After(r.opts.RetryInterval):
		}
	}
	f.Start(r.stop)
	for _, inf := range infs {
		if !cache.WaitForCacheSync(r.stop, inf.HasSynced) {
			return
		}
	}
	r.setNotReady(nil)
	close(r.synced)
	r.log.Info("runtime kubernetes ready", "server", r.opts.Config.Host, "namespace", r.opts.Namespace)
}

func (r *Runtime) setNotReady(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && (r.notReady == nil || r.notReady.Error() != err.Error()) {
		r.log.Warn("runtime kubernetes not ready", "err", err)
	}
	r.notReady = err
}

// Ready returns nil once the runtime has reached the cluster with every
// permission it needs, and otherwise an error wrapping ErrNotReady that
// says why (the cluster does not answer; which permission is missing). It
// does not block.
func (r *Runtime) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return runtime.ErrClosed
	}
	return r.notReady
}

// ready blocks until the runtime is ready. Errors: ErrClosed, or ctx.Err()
// with the reason the runtime is not ready.
func (r *Runtime) ready(ctx context.Context) error {
	select {
	case <-r.synced:
		return nil
	default:
	}
	select {
	case <-r.synced:
		return nil
	case <-r.stop:
		return runtime.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("%w (%w)", r.Ready(), ctx.Err())
	}
}

// Close stops watching the cluster; units keep running there. Later calls
// return ErrClosed.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	return nil
}

// notify wakes everyone waiting for a change.
func (r *Runtime) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// changes returns a channel closed at the next change seen.
func (r *Runtime) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}
