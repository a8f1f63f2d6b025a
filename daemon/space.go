package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// monitorSpace attaches the store's space monitor and checks the space
// once, so that the first requests and /readyz already know it.
func (d *Daemon) monitorSpace(ctx context.Context) {
	setting := "cairn server --store-quota"
	if d.embedded == nil {
		setting = "the etcd cluster's --quota-backend-bytes"
	}
	// The store counts as full once an object of the largest size, with
	// its key, no longer fits: a create refused for lack of space then
	// finds the store full, as /readyz and the metrics say.
	reserve := d.opts.MaxObjectBytes
	if reserve <= 0 {
		reserve = registry.DefaultMaxObjectBytes
	}
	d.space = d.store.MonitorSpace(store.SpaceOptions{Quota: d.opts.StoreQuota, Setting: setting,
		Interval: d.opts.SpaceCheckInterval, Reserve: reserve + 64<<10, Logger: d.log})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := d.space.Check(cctx); err != nil {
		d.log.Warn("could not check the store's space; the space monitor tries again", "err", err)
	}
}

// ensureAdminToken reads (or on first start, creates and registers) the
// admin token. On a full store, where a new token cannot be registered,
// the server starts without one: tokens registered before still work.
func (d *Daemon) ensureAdminToken(ctx context.Context) error {
	var err error
	d.token, err = d.auth.EnsureAdminToken(ctx, filepath.Join(d.opts.DataDir, "admin.token"))
	if errors.Is(err, store.ErrNoSpace) {
		d.log.Error("the store is full: no admin token could be registered; tokens registered before still work, "+
			"and a restart once space is freed registers one", "err", err)
		return nil
	}
	return err
}

// spaceMetrics are the store's space metrics, read from the space monitor
// at each scrape.
func spaceMetrics(s *store.Store) []prometheus.Collector {
	gauge := func(name, help string, value func(store.Space) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return value(s.Space()) })
	}
	return []prometheus.Collector{
		gauge("cairn_store_quota_bytes", "The store's space quota in bytes (0 until first checked).",
			func(sp store.Space) float64 { return float64(sp.Quota) }),
		gauge("cairn_store_size_bytes", "The store's database size in bytes, which the quota counts.",
			func(sp store.Space) float64 { return float64(sp.Size) }),
		gauge("cairn_store_size_in_use_bytes", "The part of the store's database holding data; the rest is freed by defragmentation.",
			func(sp store.Space) float64 { return float64(sp.InUse) }),
		gauge("cairn_store_full", "1 while the store is full (past its soft limit, or etcd's no-space alarm raised): writes that add data are refused.",
			func(sp store.Space) float64 {
				if sp.Full {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cairn_store_recoveries_total",
			Help: "Times the store went from full back to accepting writes, by itself or not, since the server started."},
			func() float64 { return float64(s.Space().Recoveries) }),
	}
}
