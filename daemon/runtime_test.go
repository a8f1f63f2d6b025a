package daemon_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	"k8s.io/client-go/rest"
)

func TestDaemon_AnUnreachableRuntimeClusterLeavesTheAPIServingAndReadyzSaysWhy(t *testing.T) {
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
	d := start(t, daemon.Options{DataDir: filepath.Join(t.TempDir(), "data"),
		Controllers: controllers.List(controllers.Config{}), Runtime: rt})
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), testkit.Secret("default", "s", map[string]string{"k": "v"})); err != nil {
		t.Fatalf("the API does not serve: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "/readyz to say the runtime's cluster does not answer", func() bool {
		code, body := get(t, d, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "runtime") && strings.Contains(body, "does not answer")
	})
}
