package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	cairnclient "cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/server/servertest"
)

// rawGet sends an admin GET from any goroutine (it never fails the test).
func rawGet(ctx context.Context, s *servertest.Server, p string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+p, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	return s.HTTPClient().Do(req)
}

// metricsText is what /metrics serves.
func metricsText(t testing.TB, s *servertest.Server) string {
	t.Helper()
	return string(newClient(t, s).do("GET", "/metrics", nil).expect(t, http.StatusOK).body)
}

// waitMetric waits until /metrics shows line (a sample with its value).
func waitMetric(t testing.TB, s *servertest.Server, line string) {
	t.Helper()
	testkit.EventuallyNil(t, 20*time.Second, line, func() error {
		if body := metricsText(t, s); !strings.Contains(body, line+"\n") {
			return fmt.Errorf("not in /metrics")
		}
		return nil
	})
}

// expectTooMany checks a 429 answer: Retry-After, and a Status naming the
// flag and the cap.
func expectTooMany(t testing.TB, r reply, flag string, limit int) {
	t.Helper()
	r.expect(t, http.StatusTooManyRequests)
	st := r.status(t)
	if st.Reason != api.ReasonTooManyRequests || !strings.Contains(st.Message, flag) ||
		!strings.Contains(st.Message, fmt.Sprint(limit)) || r.header.Get("Retry-After") != "1" {
		t.Fatalf("429 with Retry-After %q and %+v, want Retry-After 1 and a TooManyRequests Status naming %s and %d",
			r.header.Get("Retry-After"), st, flag, limit)
	}
}

func TestInflight_OverTheCapIsRefusedWith429AndWatchesCountApart(t *testing.T) {
	const maxRequests, maxWatches = 2, 3
	h := newWidgetHooks()
	s := startWithWidgets(t, h, servertest.WithServerOptions(func(o *server.Options) {
		o.MaxRequestsInflight, o.MaxWatches = maxRequests, maxWatches
	}))
	c := newClient(t, s)
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w")).expect(t, http.StatusCreated)
	ctx := testkit.Context(t)
	watchPath := nsPath("default", "widgets") + "?watch=true"

	// maxWatches watches are open: the next watch, and a followed log
	// (a stream, which counts as a watch once it streams), are refused.
	var watches []io.ReadCloser
	for range maxWatches {
		watches = append(watches, openStream(t, s, watchPath))
	}
	expectTooMany(t, c.do("GET", watchPath, nil), "--max-watches", maxWatches)
	expectTooMany(t, c.do("GET", nsPath("default", "widgets", "w", "logs"), nil), "--max-watches", maxWatches)
	waitMetric(t, s, `cairn_http_inflight_requests{class="watch"} 3`)

	// One watch ends: a followed log takes its place.
	watches[0].Close()
	waitMetric(t, s, `cairn_http_inflight_requests{class="watch"} 2`)
	logs, err := rawGet(ctx, s, nsPath("default", "widgets", "w", "logs"))
	if err != nil || logs.StatusCode != http.StatusOK {
		t.Fatalf("followed log: %v %v", logs, err)
	}
	defer logs.Body.Close()
	<-h.started

	// Two requests are held in their handler (the "slow" action waits for
	// release): the cap on ordinary requests is reached, the watches and
	// the log stream notwithstanding.
	held := make(chan error, maxRequests)
	for range maxRequests {
		go func() {
			resp, err := rawGet(ctx, s, nsPath("default", "widgets", "w", "slow"))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("held request answered %s", resp.Status)
				}
			}
			held <- err
		}()
	}
	for range maxRequests {
		<-h.started
	}
	expectTooMany(t, c.do("GET", nsPath("default", "widgets", "w"), nil), "--max-requests-inflight", maxRequests)
	expectTooMany(t, c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "x")), "--max-requests-inflight", maxRequests)

	// Probes and metrics are never refused.
	c.do("GET", "/healthz", nil).expect(t, http.StatusOK)
	c.do("GET", "/readyz", nil).expect(t, http.StatusOK)
	body := metricsText(t, s)
	for _, want := range []string{
		`cairn_http_inflight_requests{class="request"} 2`,
		`cairn_http_inflight_requests{class="watch"} 3`,
		`cairn_http_inflight_rejections_total{class="request"} 2`,
		`cairn_http_inflight_rejections_total{class="watch"} 2`,
		`cairn_http_requests_total{code="429",resource="widgets",verb="get"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Once the held requests end, requests are served again.
	close(h.release)
	for range maxRequests {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, s, `cairn_http_inflight_requests{class="request"} 0`)
	c.do("GET", nsPath("default", "widgets", "w"), nil).expect(t, http.StatusOK)
	for _, w := range watches[1:] {
		w.Close()
	}
}

// goroutinesIn returns the stacks of the goroutines running any of funcs.
func goroutinesIn(funcs ...string) []string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	var out []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		for _, f := range funcs {
			if strings.Contains(g, f) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func TestWatch_ClientThatStopsReadingIsCutAndReleased(t *testing.T) {
	s := servertest.Start(t, servertest.WithServerOptions(func(o *server.Options) { o.WriteTimeout = 300 * time.Millisecond }))
	watchFuncs := []string{"server.(*Server).serveWatch", "watchcache.(*cacheWatcher).run", "watchcache.(*directWatcher).run"}

	// A client opens a watch over a raw connection, reads the status line,
	// and then never reads again.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), s.Transport().TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s?watch=true&resourceVersion=%d HTTP/1.1\r\nHost: cairn\r\nAuthorization: Bearer %s\r\n\r\n",
		nsPath("default", "secrets"), revision(t, s), s.Token)
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("watch answered %q, %v", status, err)
	}
	if len(goroutinesIn(watchFuncs...)) == 0 {
		t.Fatal("no goroutine serves the watch")
	}

	// 8 MB of changes: more than the connection's buffers hold.
	createObjects(t, s, "Secret", "w", 12, 512<<10)

	// The server's write waits for the client at most the write timeout:
	// then the watch ends, and nothing of it remains.
	testkit.Eventually(t, 20*time.Second, "the watch to be cut", func() bool { return s.API.OpenWatches() == 0 })
	waitMetric(t, s, `cairn_watch_drops_total{reason="write-timeout"} 1`)
	testkit.EventuallyNil(t, 10*time.Second, "the watch's goroutines to end", func() error {
		if g := goroutinesIn(watchFuncs...); len(g) > 0 {
			return fmt.Errorf("%d left, e.g.\n%s", len(g), g[0])
		}
		return nil
	})
	// The connection is closed: the client reads what was buffered, then
	// its end.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil && !strings.Contains(err.Error(), "reset") && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the cut connection did not end: %v", err)
	}
}

// smallBufferClient is a cairn HTTP client whose connections keep 64 KiB
// receive buffers, so that a watch it does not read soon blocks the server.
func smallBufferClient(t testing.TB, s *servertest.Server) cairnclient.Interface {
	t.Helper()
	c, err := cairnclient.NewHTTP(cairnclient.Config{Server: s.URL, Token: s.Token, HTTPClient: smallBuffers(s)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWatch_InformerThatFallsBehindResumesAndMissesNothing(t *testing.T) {
	// The server's write timeout is set past the test's length: the
	// stalled client is to be ended by the registry, not cut by the server.
	s := servertest.Start(t,
		servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...),
		servertest.WithRegistryOptions(func(o *registry.Options) { o.WatchBacklog = 20 }),
		servertest.WithServerOptions(func(o *server.Options) { o.WriteTimeout = 10 * time.Minute }))
	inf := informer.New(smallBufferClient(t, s), testkit.KindWidget, "default",
		informer.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	gate := make(chan struct{})
	var mu sync.Mutex
	added := map[string]int{}
	updated := 0
	inf.AddEventHandler(informer.Handler{
		OnAdd: func(o *api.Object) {
			mu.Lock()
			added[o.Name]++
			first := len(added) == 1
			mu.Unlock()
			if first {
				<-gate // the informer's handler stalls on the first change
			}
		},
		OnUpdate: func(_, _ *api.Object) { mu.Lock(); updated++; mu.Unlock() },
	})
	var release sync.Once
	unblock := func() { release.Do(func() { close(gate) }) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { unblock(); cancel(); <-done })
	if !inf.WaitForSync(testkit.Context(t)) {
		t.Fatal("the informer did not sync")
	}
	testkit.Eventually(t, 20*time.Second, "the informer to watch", func() bool { return s.API.OpenWatches() == 1 })

	// While its handler is stuck, 19 MB of changes arrive: the client's
	// and the server's buffers fill, and the registry ends the watch for
	// being too far behind (the server still waits to write what it has,
	// then the ERROR event). The registry counts how many changes arrived since the oldest event
	// its client has not taken was sent: when the creates outrun the
	// watch, the last ones may be sent before its channel fills. So
	// changes keep arriving, one by one, until the watcher is ended.
	names := createObjects(t, s, testkit.KindWidget, "b", 300, 64<<10)
	sys := identity.With(testkit.Context(t), identity.System())
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; len(goroutinesIn("watchcache.(*cacheWatcher).run")) > 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not end the watcher after %d more changes", i)
		}
		name := fmt.Sprintf("c%04d", i)
		if _, err := s.Registry.Create(sys, testkit.Widget("default", name, testkit.SpecOf(map[string]string{"v": "x"}))); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		time.Sleep(20 * time.Millisecond)
	}
	n := len(names)
	if s.API.OpenWatches() != 1 {
		t.Fatalf("%d watches open, want the informer's, still writing", s.API.OpenWatches())
	}

	// Once its handler goes on, the informer gets what was sent, then the
	// ERROR event; it resumes from its last version and gets every change,
	// each once.
	unblock()
	testkit.EventuallyNil(t, 60*time.Second, "every change to reach the handler", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(added) < n {
			return fmt.Errorf("%d of %d objects added", len(added), n)
		}
		return nil
	})
	waitMetric(t, s, `cairn_watch_drops_total{reason="behind"} 1`)
	mu.Lock()
	defer mu.Unlock()
	for _, name := range names {
		if added[name] != 1 {
			t.Errorf("%s added %d times, want once", name, added[name])
		}
	}
	if updated != 0 || len(added) != n {
		t.Fatalf("%d objects added, %d updates: want %d added, no update", len(added), updated, n)
	}
}
