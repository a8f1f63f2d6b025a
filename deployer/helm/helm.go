// Package helm is the deployer of the deploy item type "helm": it makes
// a real Helm release (Helm's Go SDK, Helm's own Secret storage in the
// release namespace, so `helm list -n NS` shows it) in the cluster of
// the item's kubernetes-cluster Target. Its config (DESIGN.md,
// "Kubernetes"):
//
//	chart:             # exactly one of
//	  archive: {inline: <base64 .tgz>}        # or {secretRef: {name, key}} (key default "chart")
//	  repository: {url, name, version, credentials: {secretRef: {name}}}   # index.yaml over HTTP(S)
//	  ref: oci://host/path/name:version
//	release: {name, namespace}   # name default the item's, namespace default "default"
//	createNamespace: true
//	values: {...}                # the release's values
//	readiness: {disabled, custom: [...]}      # as for the manifest deployer
//	exports: [{key, fromValues: <JSONPath>}, {key, resource: {...}, jsonPath}]
//
// Each Reconcile is level-based: it loads the chart, computes the digest
// of chart and values, reads the release's last revision and does what
// Decide says: install, upgrade (only when the digest differs from the
// one cairn labelled the revision with, or an earlier run failed), or
// nothing; then it checks the readiness of the release's objects (package
// deployer/kube) and reads the exports. A failed install or upgrade
// fails the item with Helm's message and leaves the failed revision for
// `helm history` and `helm status`. Deletion uninstalls the release.
//
// Values may carry Secrets: no value appears in a status, an error, a
// log or a trace (every message is passed through a redactor of the
// values' strings), and Helm's own logs are dropped.
package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer"
	dkube "cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Type is the deploy item type this deployer handles.
const Type = "helm"

// DefaultNamespace is the release namespace when the config names none.
const DefaultNamespace = "default"

// helmTimeout bounds Helm's own waits (hooks) in one action.
const helmTimeout = 5 * time.Minute

// readinessPoll is how often the readiness of a release's objects is
// checked again.
const readinessPoll = 2 * time.Second

// Options of New.
type Options struct {
	// HTTP is the client of chart repositories and OCI registries;
	// default one with a 60 s timeout.
	HTTP *http.Client
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Kube configures the clients of the Targets' clusters (benchmarks
	// count requests with its WrapTransport).
	Kube dkube.Options
}

// Deployer is the helm deployer.
type Deployer struct {
	c        client.Interface
	clusters *dkube.Clusters
	fetch    Fetcher
	log      *slog.Logger
	backoff  backoff
}

// New returns the helm deployer acting through c (Secrets, Targets).
func New(c client.Interface, opts Options) *Deployer {
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{Timeout: 60 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Deployer{c: c, clusters: dkube.NewClusters(c, opts.Kube), fetch: Fetcher{HTTP: opts.HTTP}, log: opts.Logger}
}

// Setup adds the helm deployer to a manager's term ("deployer-helm").
func Setup(t *manager.Term) error {
	return SetupWith(t, Options{Logger: t.Logger})
}

// SetupWith is Setup with opts (tests: a chart server's HTTP client).
func SetupWith(t *manager.Term, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	d := New(t.Client, opts)
	d.clusters.ForgetDeleted(t) // a deleted Target's client goes
	return deployer.Setup(t, deployer.Options{Type: Type, Deployer: d})
}

// release is one Reconcile's or Delete's view of the item's release.
type session struct {
	cfg     Config
	cluster *dkube.Cluster
	action  *action.Configuration
	getter  *getter
	red     redactor
	// values are the release's values with the Secret references of
	// the config resolved: for Helm alone (see resolve).
	values map[string]any
}

// open decodes the config and connects to the release's cluster and
// namespace; withValues resolves the values' Secret references too (an
// uninstall needs none). A finished Outcome says why it cannot (the item
// fails); an error is worth a retry.
func (d *Deployer) open(ctx context.Context, item *deployer.Item, withValues bool) (*session, *deployer.Outcome, error) {
	cfg, err := ParseConfig(item.Spec.Config, itemName(item))
	if err != nil {
		out := deployer.Failed(api.ReasonInvalidConfig, "%v", err)
		return nil, &out, nil
	}
	written, _ := cfg.values()
	s := &session{cfg: cfg, values: written, red: newRedactor(written)}
	if withValues {
		if out, err := s.resolve(ctx, item); out != nil || err != nil {
			return nil, out, err
		}
	}
	s.cluster, err = d.clusters.For(ctx, item)
	if errors.Is(err, dkube.ErrTarget) {
		out := deployer.Failed(api.ReasonInvalidTarget, "%v", err)
		return nil, &out, nil
	} else if err != nil {
		return nil, nil, err
	}
	ns := cfg.Release.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	s.getter = getterOf(s.cluster, ns)
	if s.action, err = actionConfig(s.getter); err != nil {
		return nil, nil, err
	}
	return s, nil, nil
}

// Reconcile installs or upgrades the release when Decide says so, then
// reports its readiness and exports.
func (d *Deployer) Reconcile(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	s, out, err := d.open(ctx, item, true)
	if out != nil || err != nil {
		return outcome(out), err
	}
	loaded, err := d.fetch.Load(ctx, s.cfg.Chart, d.secrets(item))
	switch {
	case errors.Is(err, errChart):
		return deployer.Failed(api.ReasonChartUnavailable, "%s", s.red.String(err.Error())), nil
	case err != nil:
		return d.retry(ctx, item, api.ReasonChartFetchFailed, "the chart could not be fetched (retrying): "+s.red.String(err.Error()))
	}
	// The digest is of the values as written: a Secret's value is hashed
	// nowhere (its reference's version changes when the Secret does).
	written, _ := s.cfg.values()
	digest, err := Digest(loaded.Digest, written)
	if err != nil {
		return deployer.Failed(api.ReasonInvalidConfig, "%v", err), nil
	}
	cur, err := last(s.action, s.cfg.Release.Name)
	if err != nil {
		return d.unreachable(ctx, item, s, err)
	}
	run := RunHash(item.Run)
	step := Decide(decisionOf(cur), digest, run)
	trace.Check(ctx, "release %s/%s: %s (chart %s, digest %s)", s.getter.namespace, s.cfg.Release.Name, step,
		loaded.Chart.Metadata.Name+"-"+loaded.Chart.Metadata.Version, digest)
	switch step {
	case StepPending:
		return deployer.Failed(api.ReasonReleasePending, "release %s in namespace %s is %s: an operation on it never finished; "+
			"inspect it with `helm history %s -n %s`, roll it back or uninstall it, then reconcile the item",
			cur.Name, cur.Namespace, cur.Info.Status, cur.Name, cur.Namespace), nil
	case StepFailed:
		setStatus(item, s, cur, nil)
		return deployer.Failed(failReason(cur), "release %s revision %d: %s", cur.Name, cur.Version, s.red.String(cur.Info.Description)), nil
	case StepInstall, StepUpgrade:
		labels := map[string]string{LabelDigest: digest, LabelRun: run}
		rel, err := d.act(ctx, s, step, loaded.Chart, s.values, labels)
		if rel != nil {
			setStatus(item, s, rel, nil)
		}
		if err != nil {
			if dkube.Unreachable(err) {
				return d.unreachable(ctx, item, s, err)
			}
			reason := api.ReasonInstallFailed
			if step == StepUpgrade {
				reason = api.ReasonUpgradeFailed
			}
			return deployer.Failed(reason, "helm %s of release %s: %s", stepVerb(step), s.cfg.Release.Name, s.red.String(err.Error())), nil
		}
		trace.Action(ctx, "helm %s: release %s revision %d %s", stepVerb(step), rel.Name, rel.Version, rel.Info.Status)
		cur = rel
	}
	d.backoff.reset(item.UID)
	return d.observe(ctx, item, s, cur)
}

// act runs Helm's install or upgrade. The release it returns, when not
// nil, is the revision it recorded (a failed one too).
func (d *Deployer) act(ctx context.Context, s *session, step Step, ch *chart.Chart, values map[string]any,
	labels map[string]string) (*release.Release, error) {
	var r ri.Releaser
	var err error
	if step == StepInstall {
		in := action.NewInstall(s.action)
		in.ReleaseName, in.Namespace, in.CreateNamespace = s.cfg.Release.Name, s.getter.namespace, s.cfg.CreateNamespace
		in.WaitStrategy, in.Timeout, in.Labels = kube.HookOnlyStrategy, helmTimeout, labels
		r, err = in.RunWithContext(ctx, ch, values)
	} else {
		up := action.NewUpgrade(s.action)
		up.Namespace, up.WaitStrategy, up.Timeout, up.Labels = s.getter.namespace, kube.HookOnlyStrategy, helmTimeout, labels
		up.ResetValues, up.MaxHistory = true, 10
		r, err = up.RunWithContext(ctx, s.cfg.Release.Name, ch, values)
	}
	if r != nil {
		if rel, cerr := v1(r); cerr == nil && rel != nil {
			return rel, err
		}
	}
	if err != nil {
		// The failed revision, when Helm recorded one.
		if rel, lerr := last(s.action, s.cfg.Release.Name); lerr == nil && rel != nil && rel.Labels[LabelRun] == labels[LabelRun] {
			return rel, err
		}
	}
	return nil, err
}

// observe checks the readiness of the release's objects and, once they
// are ready, reads the exports.
func (d *Deployer) observe(ctx context.Context, item *deployer.Item, s *session, rel *release.Release) (deployer.Outcome, error) {
	refs, err := objects(rel, s.getter.mapper)
	if err != nil {
		return deployer.Failed(api.ReasonInstallFailed, "%v", err), nil
	}
	g := newUIDGetter(s.cluster)
	rep, err := dkube.CheckAll(ctx, g, refs, s.cfg.Readiness)
	if err == nil {
		err = g.fill(ctx, refs)
	}
	if err != nil {
		return d.unreachable(ctx, item, s, err)
	}
	setStatus(item, s, rel, managed(refs, rep, g))
	if st, bad := rep.NotReady(); bad {
		trace.Check(ctx, "%s is not ready: %s", st.Ref, s.red.String(st.Message))
		item.Status.LastError = &api.LastError{Reason: "NotReady", Message: s.red.String(st.Ref.String() + " is not ready: " + st.Message)}
		return deployer.InProgress(readinessPoll), nil
	}
	item.Status.LastError = nil
	values, err := allValues(s.written(rel))
	if err != nil {
		return deployer.Failed(api.ReasonInstallFailed, "%s", s.red.String(err.Error())), nil
	}
	exports, err := dkube.Exports(ctx, s.cluster, values, s.cfg.Exports)
	if err != nil {
		if dkube.Unreachable(err) {
			return d.unreachable(ctx, item, s, err)
		}
		return deployer.Failed("InvalidExports", "%s", s.red.String(err.Error())), nil
	}
	return deployer.Succeeded(exports), nil
}

// Abort has nothing to stop: Helm's actions run within a Reconcile.
func (d *Deployer) Abort(context.Context, *deployer.Item) error { return nil }

// Delete uninstalls the release (a missing one is uninstalled already).
func (d *Deployer) Delete(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	s, out, err := d.open(ctx, item, false)
	if out != nil {
		if out.Error != nil && out.Error.Reason == api.ReasonInvalidConfig {
			return deployer.Succeeded(nil), nil // an item that never decoded installed nothing
		}
		out.Error.Message += "; annotate the item " + api.AnnotationDeleteWithoutUninstall + `: "true" to delete it without uninstalling`
		return *out, nil
	}
	if err != nil {
		return deployer.Outcome{}, err
	}
	un := action.NewUninstall(s.action)
	un.IgnoreNotFound, un.WaitStrategy, un.Timeout = true, kube.HookOnlyStrategy, helmTimeout
	if _, err := un.Run(s.cfg.Release.Name); err != nil {
		if dkube.Unreachable(err) {
			return d.unreachable(ctx, item, s, err)
		}
		return deployer.Failed(api.ReasonUninstallFailed, "helm uninstall of release %s: %s", s.cfg.Release.Name, s.red.String(err.Error())), nil
	}
	trace.Action(ctx, "helm uninstall: release %s/%s", s.getter.namespace, s.cfg.Release.Name)
	d.backoff.reset(item.UID)
	return deployer.Succeeded(nil), nil
}

// Forget drops the item's backoff.
func (d *Deployer) Forget(_ context.Context, item *deployer.Item) error {
	d.backoff.reset(item.UID)
	return nil
}

// unreachable reports a cluster that did not answer: the item keeps
// progressing, retried with backoff within its timeout, and says why in
// lastError (a deletion adds the way out). Other errors are returned.
func (d *Deployer) unreachable(ctx context.Context, item *deployer.Item, s *session, err error) (deployer.Outcome, error) {
	if !dkube.Unreachable(err) {
		return deployer.Outcome{}, fmt.Errorf("helm: release %s: %s", s.cfg.Release.Name, s.red.String(err.Error()))
	}
	msg := "the cluster of target " + item.Spec.Target + " did not answer (retrying): " + s.red.String(err.Error())
	if item.Deleting() {
		msg += "; if the cluster is gone, annotate the item " + api.AnnotationDeleteWithoutUninstall + `: "true" to delete it without uninstalling`
	}
	return d.retry(ctx, item, api.ReasonClusterUnreachable, msg)
}

// retry says why in lastError and the trace, and asks for another look
// after the item's next backoff.
func (d *Deployer) retry(ctx context.Context, item *deployer.Item, reason api.ErrorReason, msg string) (deployer.Outcome, error) {
	after := d.backoff.next(item.UID)
	trace.Check(ctx, "%s: %s (next try in %s)", reason, msg, after)
	item.Status.LastError = &api.LastError{Reason: reason, Message: msg}
	return deployer.InProgress(after), nil
}

// secrets reads Secret keys of the item's namespace, acting for the item.
func (d *Deployer) secrets(item *deployer.Item) SecretReader {
	return func(ctx context.Context, ref SecretRef) ([]byte, error) {
		obj, err := d.c.Get(api.ActFor(ctx, api.KindDeployItem, &item.ObjectMeta), api.KindSecret, item.Namespace, ref.Name)
		if errors.Is(err, api.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: Secret %s does not exist in namespace %s", errChart, ref.Field, ref.Name, item.Namespace)
		} else if err != nil {
			return nil, fmt.Errorf("helm: read Secret %s: %w", ref.Name, err)
		}
		sec, err := client.Convert[*api.Secret](obj)
		if err != nil {
			return nil, fmt.Errorf("helm: Secret %s does not decode", ref.Name)
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("%w: %s: Secret %s has no key %q", errChart, ref.Field, ref.Name, ref.Key)
		}
		return v, nil
	}
}

// setStatus records rel (and the managed objects, when known) in the
// item's status.providerStatus.
func setStatus(item *deployer.Item, s *session, rel *release.Release, objs []dkube.ManagedResource) {
	ps := ProviderStatus{Release: statusOf(rel)}
	ps.ManagedResources = objs
	if objs != nil {
		ps.SetReady() // `cairn get deployitems` shows it
	}
	if raw, err := json.Marshal(ps); err == nil {
		item.Status.ProviderStatus = raw
	}
}

// managed lists refs with their uids and readiness.
func managed(refs []dkube.ObjectRef, rep dkube.Report, g *uidGetter) []dkube.ManagedResource {
	out := make([]dkube.ManagedResource, 0, len(refs))
	for _, r := range refs {
		st := rep.Of(r)
		out = append(out, dkube.ManagedResource{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			UID: g.uid(r), Policy: dkube.PolicyManage, Ready: st.Ready, Message: st.Message})
	}
	return out
}

func failReason(r *release.Release) api.ErrorReason {
	if r.Version <= 1 {
		return api.ReasonInstallFailed
	}
	return api.ReasonUpgradeFailed
}

func stepVerb(s Step) string {
	if s == StepInstall {
		return "install"
	}
	return "upgrade"
}

func outcome(o *deployer.Outcome) deployer.Outcome {
	if o == nil {
		return deployer.Outcome{}
	}
	return *o
}

// itemName is the deploy item's name in its execution (the object's
// name otherwise): the default release name.
func itemName(item *deployer.Item) string {
	if n := item.Labels[api.LabelDeployItemName]; n != "" {
		return n
	}
	return item.Name
}

// backoff counts the consecutive retries of each item: 1 s doubling to
// 30 s.
type backoff struct {
	mu sync.Mutex
	n  map[string]int
}

func (b *backoff) next(uid string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == nil {
		b.n = map[string]int{}
	}
	n := b.n[uid]
	b.n[uid] = n + 1
	return min(time.Second<<min(n, 5), 30*time.Second)
}

func (b *backoff) reset(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.n, uid)
}
