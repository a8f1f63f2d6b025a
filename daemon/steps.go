package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/etcdelection"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// The steps of start, in the order it takes them.

// openStore starts the embedded etcd unless Options.EtcdEndpoints names a
// cluster, connects to it and starts watching its space. It returns the
// endpoints it connected to. Errors: etcd cannot start or be reached.
func (d *Daemon) openStore(ctx context.Context) ([]string, error) {
	endpoints := d.opts.EtcdEndpoints
	if len(endpoints) == 0 {
		e, err := embedded.Start(d.opts.DataDir, embedded.Options{MaxTxnOps: d.opts.MaxTxnOps, Quota: d.opts.StoreQuota})
		if err != nil {
			return nil, err
		}
		d.embedded = e
		endpoints = []string{e.Endpoint}
	}
	cli, err := store.Dial(ctx, endpoints)
	if err != nil {
		return nil, err
	}
	d.etcd, d.store = cli, store.New(cli)
	d.monitorSpace(ctx)
	return endpoints, nil
}

// openRegistry loads (or creates) the encryption key and builds the
// registry over the store, with the kinds and the event service's
// authorization, then initializes the store (its system objects). Errors:
// the key file is not private or does not match the store's key, the
// options are invalid, the store fails.
func (d *Daemon) openRegistry(ctx context.Context, events *event.Service) error {
	o := d.opts
	keyFile := o.EncryptionKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(o.DataDir, "encryption.key")
	}
	enc, err := registry.LoadOrCreateKey(keyFile)
	if err != nil {
		return err
	}
	d.registry, err = registry.New(d.store, registry.Options{Kinds: kinds.All(kinds.Deps{Now: time.Now, EventActions: events.Actions(), EventRemoveWrites: events.RemoveWrites,
		DeployItemActions: events.Logs().DeployItemActions()}), Encryption: enc,
		NamespaceMaxObjects: o.NamespaceMaxObjects, NamespaceMaxBytes: o.NamespaceMaxBytes,
		Authorize: []authz.Rule{authz.AllowUnscoped, events.Authorize}, Authority: events,
		BookmarkInterval: o.BookmarkInterval, Logger: d.log, MaxTxnOps: o.MaxTxnOps, MaxObjectBytes: o.MaxObjectBytes,
		StoreTimeout: o.StoreTimeout})
	if err != nil {
		return err
	}
	if err := d.registry.Init(ctx); err != nil {
		return fmt.Errorf("daemon: initialize the store: %w", err)
	}
	// The schemas every write records its managed fields with are built
	// now, before the API serves: built by the first write instead, they
	// took that write's store deadline (seconds on a loaded machine).
	if _, err := d.registry.OpenAPI(); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// openAuth builds the authenticator (event tokens checked by the event
// service) and makes sure the admin token exists. Errors: the token file
// is not private, the store fails.
func (d *Daemon) openAuth(ctx context.Context, events *event.Service) error {
	d.auth = auth.New(d.store)
	d.auth.SetScopeCheck(events.CheckToken)
	return d.ensureAdminToken(ctx)
}

// newManager opens the runtime and builds the controller manager when
// Options.Controllers names any; a pure API server has neither. Errors:
// the runtime dir cannot be used (or its isolation needs root), the
// manager's options are invalid.
func (d *Daemon) newManager() error {
	o := d.opts
	if len(o.Controllers) == 0 {
		return nil
	}
	var err error
	if d.runtime, err = openRuntime(o, d); err != nil {
		return err
	}
	d.manager, err = manager.New(manager.Options{
		Client: d.system, Controllers: o.Controllers, Identity: d.advertised(),
		LeaderElection: true, LeaseDuration: o.LeaderTTL, Logger: d.log, Metrics: d.metrics,
		Runtime: d.runtime, APIServer: d.advertised(), APICAFile: d.caFile,
	})
	return err
}

// bindEvents gives the event service the registry and the runtime whose
// logs it serves, or no runtime on a server that runs no controllers.
//
// The typed-nil trap: a nil *rtlocal.Runtime (or any nil pointer) stored
// in the runtime.Runtime interface would be an interface that is not nil
// (it holds a type), so the service would believe it has a runtime and
// call methods on a nil pointer. d.runtime is an interface that is only
// ever set from openRuntime's non-nil results, so its zero value is an
// untyped nil; it is checked here before it is converted.
func bindEvents(events *event.Service, reg *registry.Registry, rt runtime.Closer) {
	if rt == nil {
		events.Bind(reg, nil)
		return
	}
	events.Bind(reg, rt)
}

// writeConfigs writes the client config and the kubeconfig for the admin,
// warning (not failing) when it cannot.
func (d *Daemon) writeConfigs() {
	if err := d.writeClientConfig(); err != nil {
		d.log.Warn("could not write the client config", "path", d.opts.ClientConfigPath, "err", err)
	}
	if err := d.writeKubeconfig(); err != nil {
		d.log.Warn("could not write the kubeconfig", "dir", filepath.Dir(d.opts.ClientConfigPath), "err", err)
	}
}

// serve runs the daemon's loops until Stop or the first of them fails:
// the HTTP API, the space monitor, the compactor (in the elected server),
// the controller manager, the embedded etcd's watch; once they have all
// returned it closes the store and Done.
func (d *Daemon) serve() {
	rctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.spawn(func() error { return d.http.Serve(rctx, d.listener) })
	// Every server watches the space and recovers a full store: etcd
	// grants no lease then, so this cannot wait for an election.
	d.spawn(func() error {
		d.space.Run(rctx)
		return nil
	})
	// Compaction runs in one server at a time, whether or not it runs the
	// controllers: pure API servers must not let history grow forever.
	d.spawn(func() error {
		return etcdelection.Run(rctx, d.etcd, etcdelection.Options{Name: "compactor", Identity: d.advertised(),
			TTL: d.opts.LeaderTTL, Logger: d.log}, func(ctx context.Context) {
			d.store.RunGuardedCompactor(ctx, d.opts.CompactionInterval, func(ctx context.Context, rev int64) error {
				return etcdelection.Guard(ctx, fmt.Sprint(rev)) // fenced: only the holder of the election compacts
			}, d.log)
		})
	})
	if d.manager != nil {
		d.spawn(func() error { return d.manager.Run(rctx) })
	}
	if d.embedded != nil {
		d.spawn(func() error {
			select {
			case err := <-d.embedded.Err():
				return fmt.Errorf("daemon: embedded etcd failed: %w", err)
			case <-rctx.Done():
				return nil
			}
		})
	}
	go func() {
		d.wg.Wait()
		d.closeStore()
		close(d.done)
	}()
}
