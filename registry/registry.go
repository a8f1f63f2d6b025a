// Package registry gives cairn's API semantics over the store: defaulting
// and validation per kind, uid and generation, resourceVersion
// compare-and-swap, the status subresource, finalizers and deletion marks,
// owner checks, label selection, paging, watches and secret encryption.
// The HTTP server and in-process clients both call it, so both behave alike.
//
// Single-object verbs (Create, Update, UpdateStatus, Patch, Delete) and
// transactions over several objects (Txn) share the same planning: each
// object's write is planned with every check (plan.go), then its plan is
// committed alone or with the others in one etcd transaction.
//
// # The write path
//
// Every write goes down one path; the file of each step is in brackets:
//
//	Create, Update, UpdateStatus, Patch, Apply, Delete, Txn.Commit
//	  admit: the kind and the caller, authorized             [authorize.go]
//	  newWrite: the write as a txnItem                        [txn.go]
//	  └─ run: the one commit path, retrying until done        [commit.go]
//	     ├─ lockUnconditional: writes without a resourceVersion
//	     │    to one object wait for each other (keyLocks)    [txn.go, retry.go]
//	     ├─ planAll → planItem, per item, each attempt        [commit.go]
//	     │    readForWrite: the watch cache, a local read, or
//	     │      linearizable after a lost race                [codec.go]
//	     │    planCreate | planUpdate | planDelete: defaults,
//	     │      kind hooks, validation, guards → a plan       [plan.go]
//	     │      (errStaleRead: read at another version)       [errors.go]
//	     ├─ commitAttempt → commitAll: the plans' conditions
//	     │    and writes in one transaction                   [commit.go]
//	     │    checkSpace, checkTxnSize, commitWithinLimits    [space.go, txnsize.go, limits.go]
//	     │    txn: fenced by the caller's Lease if any        [fence.go]
//	     │    store.Txn
//	     ├─ on store.ErrPrecondition: failing (which plan), lose:
//	     │    explain (retry, or Conflict / AlreadyExists /
//	     │    NotFound)                                       [commit.go, namespace.go]
//	     ├─ on an unavailable or timed-out store: settle the
//	     │    unsure commits, back off, retry                 [outcome.go]
//	     └─ pause: jittered backoff between retries           [retry.go]
//	  apiError: every failure becomes an *api.Status          [errors.go]
//
//	UpdateStatuses (controllers' statuses, many at once)      [batch.go]
//	  admit and newWrite per object; batchRounds: each object
//	  once per round; per round, per MaxTxnItems:
//	  └─ commitStatuses: prefetch (the objects the watch cache
//	     lacks, in one round trip) → run, as above; a write run names as
//	     failing is dropped and run goes again without it; a
//	     transaction refused as a whole (splittable) is
//	     committed write by write
//
// Every verb (Get, List, Watch, Create, Update, UpdateStatus, Patch,
// Delete, Txn.Commit, Act) needs the caller in its context (identity.With)
// and refuses a context without one (Unauthorized); it authorizes the
// caller with the registry's Authorizer (Forbidden). Every method returns
// *api.Status errors (check them with errors.Is against api.ErrNotFound,
// api.ErrConflict, ...); store failures are mapped to them in one function
// (apiError).
package registry

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry/internal/usage"
	"cairn.dev/cairn/registry/internal/watchcache"
	"cairn.dev/cairn/store"
)

// KeyPrefix is where objects live in etcd:
// /cairn/objects/{plural}/{namespace}/{name} (no namespace segment for
// cluster-scoped kinds).
const KeyPrefix = "/cairn/objects/"

// Options configures a Registry.
type Options struct {
	// Kinds are the kinds served. Namespace must be among them.
	Kinds []Kind
	// Encryption encrypts the values of Encrypted kinds; required when any
	// kind is Encrypted.
	Encryption *Encryption
	// BookmarkInterval is how often watches send a BOOKMARK; default 30s.
	BookmarkInterval time.Duration
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// Authorize are the global authorization rules, consulted after the
	// rules of the kind (and action) a request addresses: the extension
	// point for what no single kind decides (e.g. authz.AllowUnscoped, or
	// the scope of worker tokens). Admins are allowed without rules; with
	// none, nobody else is.
	Authorize []authz.Rule
	// Authority says what worker principals may do, when they are the
	// creators of objects (creator.go); without it, objects created by
	// worker tokens are refused.
	Authority Authority
	// Logger receives the registry's warnings (a watch cache's etcd watch
	// that ended and is restarted); default slog.Default(), as in cairn's
	// other packages.
	Logger *slog.Logger
	// NamespaceMaxObjects and NamespaceMaxBytes are the limits of a
	// namespace whose spec.limits leaves them unset (see limits.go): at
	// most so many objects, and so many bytes of their stored encodings.
	// 0 is DefaultNamespaceMaxObjects and DefaultNamespaceMaxBytes; a
	// negative value sets no limit.
	NamespaceMaxObjects int64
	NamespaceMaxBytes   int64
	// MaxTxnOps is the most conditions, and the most writes, the store
	// accepts in one transaction (etcd's --max-txn-ops); a write that needs
	// more is refused with Invalid before it reaches the store. Default
	// DefaultMaxTxnOps, etcd's own default; at least MinTxnOps.
	MaxTxnOps int
	// MaxObjectBytes bounds an object's stored encoding (after encryption):
	// a create or update beyond it is refused with RequestEntityTooLarge;
	// default DefaultMaxObjectBytes. Keep it well under store.MaxTxnBytes.
	MaxObjectBytes int64

	// StoreTimeout is the API's store timeout (store.WithTimeout), the
	// server's; default store.DefaultTimeout. The in-process client gives
	// it to each of its calls (WithStoreTimeout), as the server gives it to
	// each request. It also bounds how long the store may stay silent under
	// a watch: a shared watch cache (or a watch of its own) whose etcd
	// watch hears nothing for half of it asks etcd for progress, and one
	// that then hears nothing for StoreTimeout more ends its watchers with
	// ServiceUnavailable (they watch again).
	StoreTimeout time.Duration

	// WatchBacklog and WatchBacklogBytes bound how far one watcher may
	// fall behind: how many changes, and how many bytes of them, may wait
	// for its consumer before the watch is ended with TooManyRequests (the
	// client watches again from its last resourceVersion). Defaults 5000
	// changes and 16 MiB; they never exceed the watch cache's own bounds.
	WatchBacklog      int
	WatchBacklogBytes int64
}

// Registry serves the API semantics. It is safe for concurrent use.
type Registry struct {
	store    *store.Store
	kinds    map[string]*Kind // by kind name
	byPlural map[string]*Kind
	enc      *Encryption
	opts     Options
	authz    *authz.Authorizer
	watch    *watchcache.Caches // shared watch caches per kind (watch.go)
	usage    *usage.Tracker     // per-namespace usage (limits.go)
	locks    keyLocks           // unconditional writes per object (retry.go)
	// listHints sizes the first store read of a list (list.go): kind name
	// → *atomic.Int64, the largest value of the kind's last page read.
	listHints sync.Map
	// schemas are the OpenAPI documents and the field managers of
	// server-side apply, built on first use (managedfields.go).
	schemas schemas
	// fences remembers the Leases that fenced writes checked (fence.go).
	fences fenceCache
}

// New builds a registry over s.
func New(s *store.Store, opts Options) (*Registry, error) {
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = store.DefaultTimeout
	}
	if opts.MaxTxnOps == 0 {
		opts.MaxTxnOps = DefaultMaxTxnOps
	}
	if opts.MaxTxnOps < MinTxnOps {
		return nil, fmt.Errorf("registry: MaxTxnOps must be at least %d (one object's write within the metadata limits), got %d", MinTxnOps, opts.MaxTxnOps)
	}
	if opts.MaxObjectBytes <= 0 {
		opts.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if opts.MaxObjectBytes > store.MaxTxnBytes {
		return nil, fmt.Errorf("registry: the object size limit %d exceeds what one etcd request holds (%d)", opts.MaxObjectBytes, store.MaxTxnBytes)
	}
	r := &Registry{store: s, kinds: map[string]*Kind{}, byPlural: map[string]*Kind{},
		enc: opts.Encryption, opts: opts, authz: authz.New(opts.Authorize...)}
	for i := range opts.Kinds {
		k := &opts.Kinds[i]
		if k.prepare == nil {
			return nil, fmt.Errorf("registry: kind %q was not built with Define", k.Kind)
		}
		if k.fieldsErr != nil {
			return nil, k.fieldsErr
		}
		if _, dup := r.kinds[k.Kind]; dup {
			return nil, fmt.Errorf("registry: kind %q registered twice", k.Kind)
		}
		if k.Encrypted && opts.Encryption == nil {
			return nil, fmt.Errorf("registry: kind %q is encrypted but no encryption key is set", k.Kind)
		}
		r.kinds[k.Kind] = k
		r.byPlural[k.Plural] = k
	}
	if _, ok := r.kinds[api.KindNamespace]; !ok {
		return nil, fmt.Errorf("registry: the Namespace kind must be registered")
	}
	r.watch = watchcache.New(s, r.watchOptions())
	r.usage = r.newUsage()
	return r, nil
}

// system is ctx carrying the system identity, for the registry's own
// writes (Init).
func system(ctx context.Context) context.Context { return identity.With(ctx, identity.System()) }

// Store returns the underlying store.
func (r *Registry) Store() *store.Store { return r.store }

// WithStoreTimeout returns ctx with the API's store timeout
// (Options.StoreTimeout) unless it carries one already: the in-process
// client gives it to each call, so that the controllers of a server's
// process get, when etcd fails, the answers an HTTP client gets (503 with
// a retry, or a Timeout naming what may have been written) within the
// same bound rather than waiting for as long as the outage lasts.
func (r *Registry) WithStoreTimeout(ctx context.Context) context.Context {
	if store.TimeoutOf(ctx) > 0 {
		return ctx
	}
	return store.WithTimeout(ctx, r.opts.StoreTimeout)
}

// Kinds returns the served kinds, sorted by name.
func (r *Registry) Kinds() []api.KindInfo {
	out := make([]api.KindInfo, 0, len(r.kinds))
	for _, k := range r.kinds {
		out = append(out, k.KindInfo)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// KindDefs returns the served kinds' definitions, sorted by name. They
// are the registry's: read them, never modify them.
func (r *Registry) KindDefs() []*Kind {
	out := make([]*Kind, 0, len(r.kinds))
	for _, k := range r.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Lookup finds a kind by name ("Secret"), plural ("secrets") or short name,
// case-insensitively (api.ResolveKind). It returns NotFound for an unknown
// kind.
func (r *Registry) Lookup(name string) (*Kind, error) {
	if k, ok := r.kinds[name]; ok {
		return k, nil
	}
	if k, ok := r.byPlural[name]; ok {
		return k, nil
	}
	if k, ok := api.ResolveKind(r.Kinds(), name); ok {
		return r.kinds[k.Kind], nil
	}
	return nil, api.NewStatus(api.ReasonNotFound, "the server does not serve the kind %q", name)
}

// key is the etcd key of an object; with name "" it is the prefix of a
// namespace's (or, with ns "", every) object of the kind.
func (r *Registry) key(k *Kind, ns, name string) string {
	p := KeyPrefix + k.Plural + "/"
	if k.Namespaced && ns != "" {
		p += ns + "/"
	}
	return p + name
}
