package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// createObjects creates n objects of kind (Secret or Widget) named
// prefix000... in default through the registry (as the system), each with
// a value of size bytes (a Secret's data, a Widget's spec) and the label
// even=true|false; it returns their names in order.
func createObjects(t testing.TB, s *servertest.Server, kind, prefix string, n, size int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(identity.With(context.Background(), identity.System()), 5*time.Minute)
	defer cancel()
	value := strings.Repeat("v", size)
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				names[i] = fmt.Sprintf("%s%03d", prefix, i)
				label := testkit.Labels("even", fmt.Sprint(i%2 == 0))
				obj := testkit.Secret("default", names[i], map[string]string{"v": value}, label)
				if kind == testkit.KindWidget {
					obj = testkit.Widget("default", names[i], label, testkit.SpecOf(map[string]string{"v": value}))
				}
				if _, err := s.Registry.Create(ctx, obj); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return names
}

// getList GETs a list with query q and returns the raw body.
func getList(t testing.TB, s *servertest.Server, q url.Values) []byte {
	t.Helper()
	return newClient(t, s).do("GET", nsPath("default", "secrets")+"?"+q.Encode(), nil).expect(t, http.StatusOK).body
}

func itemNames(l *api.List) []string {
	out := make([]string, len(l.Items))
	for i, o := range l.Items {
		out[i] = o.Name
	}
	return out
}

func TestList_StreamedBodyIsTheListAsBefore(t *testing.T) {
	s := servertest.Start(t)
	all := createObjects(t, s, "Secret", "s", 23, 100)
	ctx := identity.With(testkit.Context(t), identity.System())

	// Without a limit, the body is byte for byte the JSON of the whole
	// api.List, metadata first, as it was when the server marshaled it.
	want, err := s.Registry.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	body := getList(t, s, url.Values{})
	if !bytes.Equal(body, append(raw, '\n')) {
		t.Fatalf("list body\n%.300s...\nwant json.Marshal of the list\n%.300s...", body, raw)
	}
	if got := itemNames(want); !slices.Equal(got, all) {
		t.Fatalf("list of %d items %v, want %v", len(got), got, all)
	}

	// With a limit, the pages hold exactly limit items (the last one the
	// rest), in name order, all at the first page's resourceVersion, the
	// last without continue; each is the registry's page, same JSON keys.
	tests := []struct {
		name     string
		selector string
		limit    int
		want     []string
	}{
		{"no selector", "", 5, all},
		{"limit dividing the list", "", 23, all},
		{"selector", "even=true", 4, evens(all)},
		{"selector, one page", "even=false", 50, odds(all)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			q := url.Values{"limit": {fmt.Sprint(tc.limit)}}
			if tc.selector != "" {
				q.Set("labelSelector", tc.selector)
			}
			opts := api.ListOptions{LabelSelector: tc.selector, Limit: int64(tc.limit)}
			rv := ""
			for page := 0; ; page++ {
				body := getList(t, s, q)
				var keys map[string]json.RawMessage
				if err := json.Unmarshal(body, &keys); err != nil {
					t.Fatal(err)
				}
				if len(keys) != 4 || keys["apiVersion"] == nil || keys["kind"] == nil || keys["metadata"] == nil || keys["items"] == nil {
					t.Fatalf("page %d has the keys %v, want apiVersion, kind, metadata, items", page, slices.Collect(maps.Keys(keys)))
				}
				var l api.List
				if err := json.Unmarshal(body, &l); err != nil {
					t.Fatal(err)
				}
				reg, err := s.Registry.List(ctx, "Secret", "default", opts)
				if err != nil {
					t.Fatal(err)
				}
				regRaw, _ := json.Marshal(reg)
				gotRaw, _ := json.Marshal(&l)
				if !bytes.Equal(gotRaw, regRaw) {
					t.Fatalf("page %d:\n%.300s\nwant the registry's page\n%.300s", page, gotRaw, regRaw)
				}
				if l.Kind != "SecretList" || l.APIVersion != api.APIVersion {
					t.Fatalf("page %d: kind %q apiVersion %q", page, l.Kind, l.APIVersion)
				}
				if rv == "" {
					rv = l.ResourceVersion
				}
				if l.ResourceVersion != rv {
					t.Fatalf("page %d at resourceVersion %s, the first at %s", page, l.ResourceVersion, rv)
				}
				got = append(got, itemNames(&l)...)
				if l.Continue == "" {
					break
				}
				if len(l.Items) != tc.limit {
					t.Fatalf("page %d holds %d items and a continue token, want %d", page, len(l.Items), tc.limit)
				}
				q.Set("continue", l.Continue)
				opts.Continue = l.Continue
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("pages hold %v, want %v", got, tc.want)
			}
		})
	}
}

func evens(all []string) (out []string) {
	for i, n := range all {
		if i%2 == 0 {
			out = append(out, n)
		}
	}
	return out
}

func odds(all []string) (out []string) {
	for i, n := range all {
		if i%2 == 1 {
			out = append(out, n)
		}
	}
	return out
}

// liveHeap is the heap the last garbage collection found live, after
// forcing one.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// slowReader reads at most 64 KiB at a time and pauses between reads, as
// a client on a slow link does.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.r.Read(p[:min(len(p), 64<<10)])
}

// streamList reads a list body item by item (never holding it whole) and
// returns its resourceVersion, continue token and item names.
func streamList(body io.Reader) (rv, cont string, items []string, err error) {
	dec := json.NewDecoder(body)
	if _, err := dec.Token(); err != nil { // {
		return "", "", nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "", nil, err
		}
		switch tok {
		case "metadata":
			var m api.ListMeta
			if err := dec.Decode(&m); err != nil {
				return "", "", nil, err
			}
			rv, cont = m.ResourceVersion, m.Continue
		case "items":
			if _, err := dec.Token(); err != nil { // [
				return "", "", nil, err
			}
			for dec.More() {
				var o struct {
					Metadata api.ObjectMeta `json:"metadata"`
				}
				if err := dec.Decode(&o); err != nil {
					return "", "", nil, err
				}
				items = append(items, o.Metadata.Name)
			}
			if _, err := dec.Token(); err != nil { // ]
				return "", "", nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", "", nil, err
			}
		}
	}
	_, err = dec.Token() // }
	return rv, cont, items, err
}

// getStream GETs p with ctx and hc (s.HTTPClient() when nil) and returns the
// response, failing the test on an error status.
func getStream(t testing.TB, ctx context.Context, hc *http.Client, s *servertest.Server, p string) *http.Response {
	t.Helper()
	if hc == nil {
		hc = s.HTTPClient()
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+p, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", p, resp.StatusCode, b)
	}
	return resp
}

func TestList_LargeListsTakeMemoryBoundedWellBelowTheirSize(t *testing.T) {
	// 100 MiB; under the race detector, which slows JSON tenfold, 40 MiB
	// and a bound of half of it: each client's pages and buffers take a
	// few MiB whatever the collection's size, and a list held whole would
	// take the collection several times over.
	objects, size, clients, share := 400, 256<<10, 4, int64(4)
	if raceDetector {
		objects, share = 160, 2
	}
	collection := int64(objects * size)
	s := servertest.Start(t)
	all := createObjects(t, s, "Secret", "big", objects, size)
	p := nsPath("default", "secrets")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// One list, decoded: its content is exactly the collection. (It also
	// warms the server's and the store's buffers up.)
	resp := getStream(t, ctx, nil, s, p)
	sum := sha256.New()
	rv, cont, items, err := streamList(io.TeeReader(resp.Body, sum))
	resp.Body.Close()
	switch {
	case err != nil:
		t.Fatalf("decode the list: %v", err)
	case rv == "" || cont != "":
		t.Fatalf("list resourceVersion %q continue %q, want a version and no continue", rv, cont)
	case !slices.Equal(items, all):
		t.Fatalf("list of %d items, want the %d in order", len(items), len(all))
	}
	want := sum.Sum(nil)
	base := liveHeap()

	// While 4 clients read the same list slowly (hashing it, so that they
	// hold nothing of it), the live heap is sampled, a collection at each
	// sample: the server must never hold the list, nor its encoding.
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() {
		var top int64
		for {
			top = max(top, liveHeap())
			select {
			case <-stop:
				peak <- top
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := getStream(t, ctx, nil, s, p)
			defer resp.Body.Close()
			sum := sha256.New()
			if _, err := io.Copy(sum, slowReader{resp.Body}); err != nil {
				t.Errorf("read the list: %v", err)
			} else if !bytes.Equal(sum.Sum(nil), want) {
				t.Error("a concurrent list differs from the first")
			}
		}()
	}
	wg.Wait()
	close(stop)
	growth := <-peak - base
	t.Logf("%d clients listing %d objects of %d KiB (%d MiB): live heap grew by at most %.1f MiB",
		clients, objects, size>>10, collection>>20, float64(growth)/(1<<20))
	if growth > collection/share {
		t.Fatalf("the live heap grew by %d MiB while %d clients listed a %d MiB collection: want less than 1/%d of it",
			growth>>20, clients, collection>>20, share)
	}
}

func TestList_StoreFailureAfterTheFirstPageTruncatesTheBody(t *testing.T) {
	var logs testkit.Buffer
	s := servertest.Start(t, servertest.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	createObjects(t, s, "Secret", "big", 16, 512<<10) // 11 MB of JSON: more than the sockets hold (64 KiB + at most 4 MiB)
	resp := getStream(t, testkit.Context(t), smallBuffers(s), s, nsPath("default", "secrets"))
	defer resp.Body.Close()
	// The client reads nothing yet, so the server is blocked within the
	// first pages; the store then compacts the list's revision away.
	createObjects(t, s, "Secret", "later", 1, 10)
	rev := revision(t, s)
	if err := s.Store.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	_, _, items, err := streamList(resp.Body)
	if err == nil || len(items) >= 16 {
		t.Fatalf("the client decoded %d items (then %v), want a truncated body", len(items), err)
	}
	t.Logf("the client read %d items, then: %v", len(items), err)
	testkit.Eventually(t, 10*time.Second, "the failure to be logged", func() bool {
		return strings.Contains(logs.String(), "list failed after its first page")
	})
}

// smallBuffers is an HTTP client of s whose connections' receive buffers
// stay at 64 KiB (no autotuning), so that a response it does not read
// soon blocks the server.
func smallBuffers(s *servertest.Server) *http.Client {
	d := &net.Dialer{}
	tr := s.Transport()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(64 << 10)
		}
		return c, err
	}
	return &http.Client{Transport: tr}
}
