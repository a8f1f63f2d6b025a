package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/target"
)

// ErrTarget: a deploy item's Target is not a usable kubernetes-cluster
// Target (wrong type, its Secret or key missing, a refused or invalid
// kubeconfig). The wrapping message names what, never a value.
var ErrTarget = errors.New("kube: unusable target")

// Options configures Clusters.
type Options struct {
	// Clients is the cache of the Targets' clients; default a new one.
	Clients *target.Clients
	// WrapTransport, if set, wraps the transport of every cluster client
	// (benchmarks count requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// QPS and Burst bound the requests to one cluster; defaults 50 and
	// 100.
	QPS   float32
	Burst int
	// Timeout bounds one request; default 30s.
	Timeout time.Duration
}

// Clusters gives deployers the cluster of a deploy item's Target: one
// Cluster per Target, rebuilt when its kubeconfig Secret changes. It is
// safe for concurrent use.
type Clusters struct {
	c    client.Interface
	opts Options
	mu   sync.Mutex
	m    map[string]*Cluster // by Target key
}

// NewClusters returns an empty cache reading Secrets through c.
func NewClusters(c client.Interface, opts Options) *Clusters {
	if opts.Clients == nil {
		opts.Clients = target.NewClients()
	}
	if opts.QPS == 0 {
		opts.QPS = 50
	}
	if opts.Burst == 0 {
		opts.Burst = 100
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	return &Clusters{c: c, opts: opts, m: map[string]*Cluster{}}
}

// Cluster is the connection to one Target's cluster, built from one
// version of its kubeconfig Secret. It never prints its configuration.
type Cluster struct {
	// Client is the Target's client (its Config holds credentials).
	Client *target.Client
	// Config is the REST configuration of Dynamic (Client.Config with
	// the rate limits and transport wrapper of Options).
	Config *rest.Config
	// Dynamic is a dynamic client on Config.
	Dynamic dynamic.Interface
	// Discovery is a cached discovery client on Config.
	Discovery discovery.CachedDiscoveryInterface
	// Mapper maps kinds to resources through Discovery.
	Mapper *restmapper.DeferredDiscoveryRESTMapper
}

// For returns the cluster of item's Target. It reads the Target's
// kubeconfig Secret through cairn's API (acting for the Target) and does
// not contact the cluster. Errors: ErrTarget (wrapped, naming what is
// wrong: the item names no Target, the wrong type, the Secret or key
// missing, a refused kubeconfig), or the API's reading the Secret.
func (cs *Clusters) For(ctx context.Context, item *deployer.Item) (*Cluster, error) {
	t := item.Target
	switch {
	case t == nil && item.Spec.Target != "":
		return nil, fmt.Errorf("%w: Target %s does not exist in namespace %s", ErrTarget, item.Spec.Target, item.Namespace)
	case t == nil:
		return nil, fmt.Errorf("%w: spec.target is required: it names a kubernetes-cluster Target", ErrTarget)
	case t.Spec.Type != api.TargetTypeKubernetesCluster:
		return nil, fmt.Errorf("%w: Target %s has type %q, not %s", ErrTarget, t.Name, t.Spec.Type, api.TargetTypeKubernetesCluster)
	}
	key := api.Key(t.Namespace, t.Name)
	ref, err := target.SecretRef(t.Spec.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: Target %s: %v", ErrTarget, t.Name, err)
	}
	sec, err := cs.secret(ctx, t, ref.Name)
	if err != nil {
		return nil, err
	}
	step := target.Plan(ref, sec)
	if !step.Connect {
		cs.drop(key)
		return nil, fmt.Errorf("%w: Target %s: %s", ErrTarget, t.Name, step.Fail.Message)
	}
	cl, err := cs.opts.Clients.Get(key, step.Source)
	if err != nil {
		cs.drop(key)
		return nil, fmt.Errorf("%w: Target %s: Secret %s key %s: %v", ErrTarget, t.Name, ref.Name, ref.Key, err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cur := cs.m[key]; cur != nil && cur.Client == cl {
		return cur, nil
	}
	c, err := cs.build(cl)
	if err != nil {
		return nil, fmt.Errorf("%w: Target %s: %v", ErrTarget, t.Name, err)
	}
	cs.m[key] = c
	return c, nil
}

// build makes a Cluster on cl.
func (cs *Clusters) build(cl *target.Client) (*Cluster, error) {
	cfg := rest.CopyConfig(cl.Config)
	cfg.QPS, cfg.Burst, cfg.Timeout = cs.opts.QPS, cs.opts.Burst, cs.opts.Timeout
	if cs.opts.WrapTransport != nil {
		cfg.Wrap(cs.opts.WrapTransport)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, errors.New("the kubeconfig does not make a client")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, errors.New("the kubeconfig does not make a discovery client")
	}
	cached := memory.NewMemCacheClient(dc)
	return &Cluster{Client: cl, Config: cfg, Dynamic: dyn, Discovery: cached,
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

func (cs *Clusters) drop(key string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.m, key)
}

// secret reads Secret name of t's namespace, acting for t.
func (cs *Clusters) secret(ctx context.Context, t *api.Target, name string) (target.Secret, error) {
	obj, err := cs.c.Get(api.ActFor(ctx, api.KindTarget, &t.ObjectMeta), api.KindSecret, t.Namespace, name)
	if errors.Is(err, api.ErrNotFound) {
		return target.Secret{}, nil
	}
	if api.IsCreatorForbidden(err) {
		return target.Secret{}, fmt.Errorf("%w: Target %s may not read Secret %s: %v", ErrTarget, t.Name, name, err)
	}
	if err != nil {
		return target.Secret{}, fmt.Errorf("kube: read Secret %s: %w", name, err)
	}
	s, err := client.Convert[*api.Secret](obj)
	if err != nil {
		return target.Secret{}, fmt.Errorf("kube: Secret %s does not decode", name)
	}
	return target.Secret{Found: true, UID: s.UID, ResourceVersion: s.ResourceVersion, Data: s.Data}, nil
}

// Mapping maps ref's kind to its resource. An unknown kind resets the
// discovery cache and is looked up once more (a CRD applied meanwhile).
// It blocks on discovery. Errors: meta.IsNoMatchError when the cluster
// has no such kind, or discovery's.
func (c *Cluster) Mapping(apiVersion, kind string) (*meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q does not parse: %w", apiVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	m, err := c.Mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		m, err = c.Mapper.RESTMapping(gk, gv.Version)
	}
	return m, err
}

// Resource returns the dynamic client of ref's resource, in namespace ns
// when it is namespaced (ns empty: ref's namespace), with its mapping.
// Errors as Mapping's; a namespaced object without a namespace is an
// error naming it.
func (c *Cluster) Resource(ref ObjectRef) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := c.Mapping(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if ref.Namespace == "" {
			return nil, nil, fmt.Errorf("%s is namespaced: give it a namespace (or config.namespace)", ref)
		}
		return c.Dynamic.Resource(m.Resource).Namespace(ref.Namespace), m, nil
	}
	return c.Dynamic.Resource(m.Resource), m, nil
}

// Get reads the object ref names. It blocks on the cluster. Errors: the
// cluster's (apierrors.IsNotFound when it does not exist; an unknown kind
// counts as NotFound too), or Resource's.
func (c *Cluster) Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	ri, _, err := c.Resource(ref)
	if meta.IsNoMatchError(err) {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		return nil, apierrorsNotFound(gv.WithKind(ref.Kind), ref.Name)
	}
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, ref.Name, metav1.GetOptions{})
}
