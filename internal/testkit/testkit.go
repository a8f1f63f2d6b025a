// Package testkit holds what cairn's tests share: waiting for a condition
// (Eventually, EventuallyNil), a bounded context (Context), object
// builders (Object, Secret, Widget) and a test kind (WidgetKind) a test
// server can serve next to the real ones. It is for tests only: no
// production package imports it.
package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// contextTimeout bounds the contexts Context returns.
const contextTimeout = 30 * time.Second

// pollInterval is how often Eventually checks its condition.
const pollInterval = 10 * time.Millisecond

// Context returns a context for a test's calls: it ends after 30 seconds,
// so that a call that hangs fails the test instead of stalling the run, or
// when the test's cleanup runs, whichever comes first.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), contextTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Eventually calls cond every few milliseconds until it returns true, and
// fails the test (t.Fatalf, naming what) when timeout passes first. cond
// runs on the test's goroutine; it must not block. Inside a
// testing/synctest bubble the polling uses the bubble's fake clock.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollInterval)
	}
}

// EventuallyNil is Eventually for a check that says why it does not hold
// yet: it calls check until it returns nil, and on timeout fails the test
// naming what and the last error check returned.
func EventuallyNil(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(pollInterval)
	}
}

// HTTPClient is an HTTP client that trusts the CA of cfg (a server's client
// config), for a test's own requests to that server.
func HTTPClient(t testing.TB, cfg client.Config) *http.Client {
	t.Helper()
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// CleanerStatusWrites creates n Cleaners, "prefix-0"..., in the default
// namespace through c and returns, for each, its status write: the object
// as created with status set to the JSON status (not written).
func CleanerStatusWrites(t testing.TB, c client.Interface, prefix string, n int, status string) []*api.Object {
	t.Helper()
	objs := make([]*api.Object, n)
	for i := range n {
		o, err := c.Create(Context(t), Cleaner(api.DefaultNamespace, fmt.Sprintf("%s-%d", prefix, i)))
		if err != nil {
			t.Fatal(err)
		}
		o.SetField(api.FieldStatus, json.RawMessage(status))
		objs[i] = o
	}
	return objs
}
