package bench

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/internal/testkit/kubetest"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkEventsKubernetesRuntime: N events (CAIRN_BENCH_KUBE_EVENTS,
// default 1,000) whose worker pod the benchmark completes at once (it
// plays the kubelet), capacity 50, on the kubernetes runtime against a
// real kube-apiserver with RBAC, the runtime acting with exactly its
// Role: the time until every event is SUCCEEDED and its pod is gone, and
// the API requests the runtime sent to the cluster per event.
func BenchmarkEventsKubernetesRuntime(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_KUBE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for iter := 0; iter < b.N; iter++ {
		c := kubetest.Start(b)
		k := c.StartKubelet("node-1")
		cfg, err := clientcmd.RESTConfigFromKubeConfig(c.ServiceAccountKubeconfig("units", "cairn", rtkube.PolicyRules()))
		if err != nil {
			b.Fatal(err)
		}
		var requests atomic.Int64
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, n: &requests} }
		cfg.QPS, cfg.Burst = -1, 0
		rt, err := rtkube.New(rtkube.Options{Config: cfg, Namespace: "units"})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		k.Play(ctx, "units", nil)
		_, cl, _ := startEventsWith(b, &controllers.Config{EventMaxWorkers: 50, EventGracePeriod: time.Nanosecond}, rt, "/bin/sh", "-c", "true")
		for rt.Ready() != nil {
			time.Sleep(10 * time.Millisecond)
		}
		before := requests.Load()
		t0 := time.Now()
		for range n {
			// A loaded machine may leave the store briefly unavailable
			// (503, nothing changed): retry those.
			for attempt := 0; ; attempt++ {
				_, err := cl.Create(ctx, eventObject())
				if err == nil {
					break
				}
				if attempt == 20 {
					b.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for {
			l, err := cl.List(ctx, api.KindEvent, "default", api.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			done := 0
			for _, o := range l.Items {
				var e api.Event
				if o.Into(&e) == nil && e.Status.Worker.Phase == api.PhaseSucceeded {
					done++
				}
			}
			pods, err := c.Clientset().CoreV1().Pods("units").List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if done == n && len(pods.Items) == 0 {
				break
			}
			if time.Since(t0) > 15*time.Minute {
				b.Fatalf("only %d of %d SUCCEEDED (%d pods left) after 15 minutes", done, n, len(pods.Items))
			}
			time.Sleep(200 * time.Millisecond)
		}
		total := time.Since(t0)
		b.ReportMetric(total.Seconds(), "s-all-done")
		b.ReportMetric(float64(requests.Load()-before)/float64(n), "kube-requests/event")
		b.ReportMetric(float64(n), "events")
	}
}
