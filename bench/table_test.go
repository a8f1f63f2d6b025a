package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// BenchmarkListTable10k: a list of 10,000 Secrets over HTTP(S), read whole,
// as plain JSON (what cairn's client and client-go's dynamic client read)
// and as a meta.k8s.io/v1 Table (what kubectl get asks for), alternating,
// five of each. Reports the median time of each and their ratio (target:
// a Table costs no more than twice a JSON list).
func BenchmarkListTable10k(b *testing.B) {
	const n, rounds = 10_000, 5
	d, _ := startServer(b)
	ctx := context.Background()
	local := d.Client()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				o := testkit.Secret("default", fmt.Sprintf("s-%05d", i), map[string]string{"user": "u", "password": "p"}, testkit.Labels("app", "web"))
				if _, err := local.Create(ctx, o); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	hc := testkit.HTTPClient(b, d.ClientConfig())
	url := d.URL() + api.BasePath + "/namespaces/default/secrets"
	get := func(accept string) (time.Duration, int) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+d.Token())
		req.Header.Set("Accept", accept)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		size, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v", accept, resp.StatusCode, err)
		}
		return time.Since(start), int(size)
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	for range b.N {
		var js, tb []time.Duration
		var jsSize, tbSize int
		get("application/json") // warm both paths
		get(table)
		for range rounds {
			t, s := get("application/json")
			js, jsSize = append(js, t), s
			t, s = get(table)
			tb, tbSize = append(tb, t), s
		}
		mj, mt := median(js), median(tb)
		b.ReportMetric(float64(mj)/float64(time.Millisecond), "json-ms")
		b.ReportMetric(float64(mt)/float64(time.Millisecond), "table-ms")
		b.ReportMetric(float64(mt)/float64(mj), "table/json")
		b.ReportMetric(float64(jsSize)/(1<<20), "json-MiB")
		b.ReportMetric(float64(tbSize)/(1<<20), "table-MiB")
	}
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
