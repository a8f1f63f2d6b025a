package event

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// A fan-out matches its event against the subscriptions of every project of
// the namespace. Listing and decoding every project for each event was most
// of a fan-out's reads; the subscriptions are kept instead, per namespace,
// indexed by source, with the mod revision of each project they were read
// from. Each fan-out checks them with one linearizable read of the
// projects' keys without their values (store.ListKeys): when the keys and
// revisions are those the cache was built from, it answers; otherwise (a
// project created, changed or deleted since) the projects are listed and
// decoded again. A project created or changed before a fan-out starts is
// therefore always seen by it, as with a list.

// maxSubscriptionNamespaces bounds the subscriptions cache; it is emptied
// when full.
const maxSubscriptionNamespaces = 1024

// subscriptionCache holds the subscriptions of the projects of the
// namespaces fanned out to last. It is safe for concurrent use.
type subscriptionCache struct {
	mu sync.Mutex
	ns map[string]*namespaceSubscriptions
}

// namespaceSubscriptions are the subscriptions of one namespace's projects
// as listed at one time. It is never modified once built.
type namespaceSubscriptions struct {
	// versions are the projects' names and mod revisions, in name order.
	versions []projectVersion
	// bySource are, per event source, the projects with a subscription to
	// it (in name order) and those subscriptions.
	bySource map[string][]subscriber
}

type projectVersion struct {
	name string
	rev  int64
}

type subscriber struct {
	project string
	subs    []api.EventSubscription
}

func newSubscriptionCache() *subscriptionCache {
	return &subscriptionCache{ns: map[string]*namespaceSubscriptions{}}
}

// subscribed lists, in name order, the projects of ev's namespace with a
// subscription matching ev (api.EventSubscription.Match). It blocks on one
// read of the projects' keys and, when they changed since the last call
// for the namespace (or the check failed), one list of the projects.
// Errors: the list's, a stored project that does not decode.
func (c *subscriptionCache) subscribed(ctx context.Context, reg *registry.Registry, ev *api.Event) ([]string, error) {
	ns := ev.Namespace
	prefix := registry.KeyPrefix + api.Plural(api.KindProject) + "/" + ns + "/"
	c.mu.Lock()
	cached := c.ns[ns]
	c.mu.Unlock()
	if cached != nil {
		kvs, err := reg.Store().ListKeys(ctx, prefix)
		if err == nil && cached.current(kvs, len(prefix)) {
			return cached.match(ev), nil
		}
	}
	built, err := listSubscriptions(ctx, reg, ns)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.ns) >= maxSubscriptionNamespaces {
		clear(c.ns)
	}
	c.ns[ns] = built
	c.mu.Unlock()
	return built.match(ev), nil
}

// listSubscriptions lists the projects of ns and indexes their
// subscriptions. Errors: the list's, a stored project that does not
// decode.
func listSubscriptions(ctx context.Context, reg *registry.Registry, ns string) (*namespaceSubscriptions, error) {
	l, err := reg.List(ctx, api.KindProject, ns, api.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := &namespaceSubscriptions{bySource: map[string][]subscriber{}}
	for _, obj := range l.Items {
		var p api.Project
		if err := obj.Into(&p); err != nil {
			return nil, fmt.Errorf("event: stored project %q does not decode: %w", obj.Name, err)
		}
		rev, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
		out.versions = append(out.versions, projectVersion{name: p.Name, rev: rev})
		out.add(p.Name, p.Spec.EventSubscriptions)
	}
	slices.SortFunc(out.versions, func(a, b projectVersion) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// add indexes the subscriptions of project by their sources.
func (n *namespaceSubscriptions) add(project string, subs []api.EventSubscription) {
	var sources []string
	for _, s := range subs {
		if !slices.Contains(sources, s.Source) {
			sources = append(sources, s.Source)
		}
	}
	for _, src := range sources {
		n.bySource[src] = append(n.bySource[src], subscriber{project: project, subs: subs})
	}
}

// current reports whether kvs, the projects' keys as stored now (in key
// order, the namespace's prefix of length trim before each name), are
// those n was built from, each at the same mod revision.
func (n *namespaceSubscriptions) current(kvs []*store.KV, trim int) bool {
	if len(kvs) != len(n.versions) {
		return false
	}
	for i, kv := range kvs {
		v := n.versions[i]
		if kv.ModRevision != v.rev || len(kv.Key) < trim || kv.Key[trim:] != v.name {
			return false
		}
	}
	return true
}

// match lists, in name order, the projects with a subscription matching
// ev.
func (n *namespaceSubscriptions) match(ev *api.Event) []string {
	var names []string
	for _, s := range n.bySource[ev.Spec.Source] {
		if slices.ContainsFunc(s.subs, func(sub api.EventSubscription) bool {
			return sub.Match(ev.Spec.Source, ev.Spec.Type, ev.Spec.Qualifiers, ev.Spec.Labels)
		}) {
			names = append(names, s.project)
		}
	}
	slices.Sort(names)
	return names
}
