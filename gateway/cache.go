package gateway

import (
	"context"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// gatewayTTL is how long a Gateway and its secret, once read, serve
// deliveries before they are read again: a changed or rotated secret
// applies within it. It spares a burst of deliveries two store reads
// each.
const gatewayTTL = 2 * time.Second

// maxCached bounds the cache; it is emptied when full.
const maxCached = 1024

// gatewayCache keeps the Gateways (and their secrets' values) read last,
// for gatewayTTL. It is safe for concurrent use.
type gatewayCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedGateway
}

type cachedGateway struct {
	gw     *api.Gateway
	secret []byte
	read   time.Time
}

func newGatewayCache(now func() time.Time) *gatewayCache {
	return &gatewayCache{now: now, m: map[string]cachedGateway{}}
}

// get returns the Gateway ns/name and its secret, from the cache when
// read less than gatewayTTL ago, else as readGateway reads them (a
// failure is not cached). Errors: readGateway's.
func (c *gatewayCache) get(ctx context.Context, reg *registry.Registry, ns, name string) (*api.Gateway, []byte, error) {
	key := ns + "/" + name
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.read) < gatewayTTL {
		return e.gw, e.secret, nil
	}
	gw, secret, err := readGateway(ctx, reg, ns, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.m, key)
		return nil, nil, err
	}
	if len(c.m) >= maxCached {
		clear(c.m)
	}
	c.m[key] = cachedGateway{gw: gw, secret: secret, read: c.now()}
	return gw, secret, nil
}
