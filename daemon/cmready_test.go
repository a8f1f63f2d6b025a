package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
)

func TestStartControllerManager_AnUnreachableRuntimeClusterMakesReadyzSayWhy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there
	rt, err := rtkube.New(rtkube.Options{Config: &rest.Config{Host: "https://" + addr, Timeout: time.Second},
		Namespace: "units", RetryInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, daemon.Options{DataDir: dataDir(t)}) // a pure API server
	opts := cmOptions(t, d)
	opts.Runtime, opts.RuntimeDir = rt, ""
	cm, err := daemon.StartControllerManager(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cm.Stop() })
	hc := testkit.HTTPClient(t, d.ClientConfig())
	readyz := func() (int, string) {
		resp, err := hc.Get(cm.URL() + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.Eventually(t, 30*time.Second, "/readyz to say the runtime's cluster does not answer", func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "the runtime is not ready") && strings.Contains(body, "does not answer")
	})
}
