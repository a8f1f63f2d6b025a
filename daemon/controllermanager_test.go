package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
)

// cmOptions are the options of a controller manager running the garbage
// collector against d, with d's admin token and CA.
func cmOptions(t *testing.T, d *daemon.Daemon) daemon.ControllerManagerOptions {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, d.CA(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctrls, err := controllers.Select(controllers.List(controllers.Config{}), "gc")
	if err != nil {
		t.Fatal(err)
	}
	testkit.UnitReachable(t)
	opts := daemon.ControllerManagerOptions{Server: d.URL(), Token: d.Token(), CAFile: ca, Listen: "127.0.0.1:0",
		Controllers: ctrls, LeaderTTL: 2 * time.Second, RuntimeDir: filepath.Join(t.TempDir(), "runtime"), Logger: quiet}
	opts.RuntimeIsolation.None = os.Geteuid() != 0
	return opts
}

func TestStartControllerManager_LeadsAndCollectsOverHTTPUntilStopped(t *testing.T) {
	d := start(t, daemon.Options{DataDir: dataDir(t)}) // a pure API server
	c := httpClient(t, d)
	cm, err := daemon.StartControllerManager(context.Background(), cmOptions(t, d))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testkit.Eventually(t, 15*time.Second, "the controller manager to lead", func() bool {
		id, err := lease.Current(ctx, c, manager.LeaseName)
		return err == nil && id == cm.URL()
	})
	// Its collector acts: a dependent of a deleted owner goes.
	owner, err := c.Create(ctx, testkit.Secret("default", "owner", password()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Secret("default", "dep", password(), testkit.OwnedBy(owner))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Delete(ctx, "Secret", "default", "owner", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, 15*time.Second, "the dependent to be collected", func() error {
		_, err := c.Get(ctx, "Secret", "default", "dep")
		if errors.Is(err, api.ErrNotFound) {
			return nil
		}
		return errors.New("dep still there")
	})
	resp, err := testkit.HTTPClient(t, d.ClientConfig()).Get(cm.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d, want 200", resp.StatusCode)
	}
	if err := cm.Stop(); err != nil {
		t.Fatalf("Stop: %v, want nil", err)
	}
	select {
	case <-cm.Done():
	default:
		t.Fatal("Done is not closed after Stop")
	}
}

func TestStartControllerManager_BadOptionsNameTheOption(t *testing.T) {
	d := start(t, daemon.Options{DataDir: dataDir(t)})
	good := cmOptions(t, d)
	for _, tc := range []struct {
		option string
		change func(o *daemon.ControllerManagerOptions)
	}{
		{"Server", func(o *daemon.ControllerManagerOptions) { o.Server = "" }},
		{"Token", func(o *daemon.ControllerManagerOptions) { o.Token = "" }},
		{"Listen", func(o *daemon.ControllerManagerOptions) { o.Listen = "" }},
		{"Listen", func(o *daemon.ControllerManagerOptions) { o.Listen = "256.0.0.1:x" }},
		{"RuntimeDir", func(o *daemon.ControllerManagerOptions) { o.RuntimeDir = "" }},
		{"LeaderTTL", func(o *daemon.ControllerManagerOptions) { o.LeaderTTL = 10 * time.Millisecond }},
		{"Controllers", func(o *daemon.ControllerManagerOptions) { o.Controllers = nil }},
		{"AdvertiseURL", func(o *daemon.ControllerManagerOptions) { o.AdvertiseURL = "10.0.0.1:7071" }},
		{"CAFile", func(o *daemon.ControllerManagerOptions) { o.CAFile = filepath.Join(t.TempDir(), "missing.crt") }},
	} {
		t.Run(tc.option, func(t *testing.T) {
			o := good
			tc.change(&o)
			cm, err := daemon.StartControllerManager(context.Background(), o)
			if err == nil {
				_ = cm.Stop()
			}
			var oe *daemon.OptionError
			if !errors.As(err, &oe) || oe.Option != tc.option {
				t.Fatalf("err %v, want an OptionError naming %s", err, tc.option)
			}
		})
	}
}
