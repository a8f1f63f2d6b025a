package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// The deployment benchmarks: root installations whose blueprint renders an
// execution of three mock deploy items (b and c depend on a), created at
// once over HTTP, and a chain of installations each importing the
// previous one's export.

// threeItems renders a, then b and c after a; a exports its port.
const threeItems = `deployItems:
- name: a
  type: mock
  config: {phase: Succeeded, export: {port: 5432}}
- name: b
  type: mock
  dependsOn: [a]
  config: {phase: Succeeded}
- name: c
  type: mock
  dependsOn: [a]
  config: {phase: Succeeded}
`

// startDeployServer runs a server with every controller and no namespace
// limits (10,000 installations make some 100,000 objects).
func startDeployServer(b *testing.B) (*daemon.Daemon, client.Interface) {
	b.Helper()
	opts := daemon.Options{
		Listen: "127.0.0.1:0", DataDir: filepath.Join(b.TempDir(), "data"),
		Controllers: controllers.List(controllers.Config{GCWorkers: 32}), NamespaceMaxObjects: -1, NamespaceMaxBytes: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	clitest.RuntimeDefaults(b, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Stop() })
	return d, httpClient(b, d)
}

// installation builds a root installation with an inline blueprint.
func installation(b *testing.B, name string, spec api.InstallationSpec) *api.Object {
	b.Helper()
	obj, err := api.FromResource(&api.Installation{
		TypeMeta:   api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindInstallation},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"bench": "deploy"}},
		Spec:       spec,
	})
	if err != nil {
		b.Fatal(err)
	}
	return obj
}

// phaseOf reads an installation's phase.
func phaseOf(obj *api.Object) api.InstallationPhase {
	var inst api.Installation
	if obj.Into(&inst) != nil {
		return ""
	}
	return inst.Status.Phase
}

// awaitConverged watches the objects of kind labelled bench=deploy from
// rv until want of them are done; state says of one object whether it is
// done (Succeeded for its generation) and, when it failed, why (which
// ends the benchmark).
func awaitConverged(b *testing.B, c client.Interface, kind, rv string, want int, timeout time.Duration,
	state func(o *api.Object) (done bool, failed error)) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := c.Watch(ctx, kind, "default", api.ListOptions{ResourceVersion: rv, LabelSelector: "bench=deploy"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	done := map[string]bool{}
	for ev := range w.Events() {
		if ev.Object == nil || ev.Type == api.Bookmark {
			continue
		}
		ok, failed := state(ev.Object)
		if failed != nil {
			b.Fatalf("%s %s failed: %v", kind, ev.Object.Name, failed)
		}
		if ok {
			done[ev.Object.Name] = true
		}
		if len(done) == want {
			return
		}
	}
	b.Fatalf("only %d of %d %ss succeeded: %v", len(done), want, kind, w.Err())
}

// awaitInstallations waits for want installations to be Succeeded (with
// their generation observed); any Failed one ends the benchmark.
func awaitInstallations(b *testing.B, c client.Interface, rv string, want int, timeout time.Duration) {
	b.Helper()
	awaitConverged(b, c, api.KindInstallation, rv, want, timeout, func(o *api.Object) (bool, error) {
		var inst api.Installation
		if o.Into(&inst) != nil {
			return false, nil
		}
		if inst.Status.Phase == api.InstallationFailed {
			return false, fmt.Errorf("%+v", inst.Status.LastError)
		}
		return inst.Status.Phase == api.InstallationSucceeded && inst.Status.ObservedGeneration == inst.Generation, nil
	})
}

// revision is the store's current revision, as a list reports it.
func revision(b *testing.B, c client.Interface) int64 {
	b.Helper()
	l, err := c.List(context.Background(), api.KindNamespace, "", api.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var rv int64
	if _, err := fmt.Sscan(l.ResourceVersion, &rv); err != nil {
		b.Fatal(err)
	}
	return rv
}

// BenchmarkInstallations10k: 10,000 root installations, each rendering an
// execution with 3 mock deploy items, created at once over HTTP: the time
// until all are Succeeded, the store writes per converged installation,
// then the time until deleting them all has removed everything they owned.
// CAIRN_BENCH_CPUPROFILE names a file for a CPU profile of the convergence.
func BenchmarkInstallations10k(b *testing.B) {
	_, c := startDeployServer(b)
	installations10k(b, c)
}

// BenchmarkInstallations10kControllerManager is BenchmarkInstallations10k
// with the controllers in a separate `cairn controller-manager` process
// (the binary, built first), talking to a pure API server over HTTPS with
// fenced writes, as a scaled-out deployment runs them.
func BenchmarkInstallations10kControllerManager(b *testing.B) {
	opts := daemon.Options{
		Listen: "127.0.0.1:0", DataDir: filepath.Join(b.TempDir(), "data"),
		NamespaceMaxObjects: -1, NamespaceMaxBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Stop() })
	dir := b.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(token, []byte(d.Token()+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte(d.ClientConfig().CertificateAuthorityData), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(clitest.BuildCairn(b), append([]string{"controller-manager", "--server", d.URL(),
		"--certificate-authority", ca, "--token-file", token, "--listen", "127.0.0.1:0", "--gc-workers", "32"},
		clitest.RuntimeFlags(b, filepath.Join(b.TempDir(), "runtime"))...)...)
	clitest.Start(b, cmd)
	installations10k(b, httpClient(b, d))
}

// installations10k is the body of the Installations10k benchmarks: c is
// the clients' API, the controllers run wherever the caller put them.
func installations10k(b *testing.B, c client.Interface) {
	const n = 10000
	ctx := context.Background()
	spec := api.InstallationSpec{Blueprint: api.BlueprintReference{Inline: &api.BlueprintSpec{
		DeployExecutions: []api.TemplateExecutor{{Name: "items", Type: api.TemplateGo, Template: threeItems}},
	}}}
	for iter := 0; iter < b.N; iter++ {
		rv0, keys0 := revision(b, c), keysWritten(b)
		stopProfile := profileController(b)
		start := time.Now()
		concurrently(b, 32, n/32+1, func(w, i int) error {
			k := w*(n/32+1) + i
			if k >= n {
				return nil
			}
			_, err := c.Create(ctx, installation(b, fmt.Sprintf("i%d-%d", iter, k), spec))
			return err
		})
		awaitInstallations(b, c, fmt.Sprint(rv0), n, 10*time.Minute)
		converged := time.Since(start)
		stopProfile()
		b.ReportMetric(converged.Seconds(), "s/converge")
		b.ReportMetric((keysWritten(b)-keys0)/n, "writes/installation")
		b.ReportMetric(float64(revision(b, c)-rv0)/n, "txns/installation")

		start = time.Now()
		deleteAll(b, c, api.KindInstallation, "bench=deploy")
		awaitNone(b, c, api.KindInstallation, api.KindExecution, api.KindDeployItem, api.KindDataObject)
		b.ReportMetric(time.Since(start).Seconds(), "s/delete")
	}
}

// awaitNone waits until no object of any of kinds is left in the
// namespace default.
func awaitNone(b *testing.B, c client.Interface, kinds ...string) {
	b.Helper()
	for _, kind := range kinds {
		testkit.EventuallyNil(b, 10*time.Minute, "every "+kind+" to be gone", func() error {
			l, err := c.List(context.Background(), kind, "default", api.ListOptions{Limit: 1})
			if err == nil && len(l.Items) > 0 {
				err = fmt.Errorf("%ss left", kind)
			}
			return err
		})
	}
}

// deleteAll deletes every object of kind matching selector, 32 at a time.
func deleteAll(b *testing.B, c client.Interface, kind, selector string) {
	b.Helper()
	ctx := context.Background()
	l, err := c.List(ctx, kind, "default", api.ListOptions{LabelSelector: selector})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	names := make(chan string)
	for w := 0; w < 32; w++ {
		wg.Go(func() {
			for name := range names {
				if _, _, err := c.Delete(ctx, kind, "default", name, api.DeleteOptions{}); err != nil && !errors.Is(err, api.ErrNotFound) {
					failed.Add(1)
				}
			}
		})
	}
	for _, o := range l.Items {
		names <- o.Name
	}
	close(names)
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d deletes failed", failed.Load())
	}
}

// BenchmarkSiblingChain: installations in a chain, each importing the
// previous one's export (root installations: their exports are
// DataObjects of the namespace). Reports the time until the last one has
// succeeded for chains of 10, 50 and 100, and the store writes per link.
func BenchmarkSiblingChain(b *testing.B) {
	for _, length := range []int{10, 50, 100} {
		b.Run(fmt.Sprint(length), func(b *testing.B) {
			_, c := startDeployServer(b)
			ctx := context.Background()
			for iter := 0; iter < b.N; iter++ {
				rv0, keys0 := revision(b, c), keysWritten(b)
				start := time.Now()
				for i := 0; i < length; i++ {
					if _, err := c.Create(ctx, installation(b, fmt.Sprintf("c%d-%d", iter, i), chainSpec(iter, i))); err != nil {
						b.Fatal(err)
					}
				}
				awaitInstallations(b, c, fmt.Sprint(rv0), length, 10*time.Minute)
				b.ReportMetric(time.Since(start).Seconds(), "s/chain")
				b.ReportMetric((keysWritten(b)-keys0)/float64(length), "writes/link")
				b.ReportMetric(float64(revision(b, c)-rv0)/float64(length), "txns/link")
				deleteAll(b, c, api.KindInstallation, "bench=deploy")
			}
		})
	}
}

// chainSpec is link i of chain iter: it imports link i-1's export as
// "in" (none for the first) and exports in+1 as "out".
func chainSpec(iter, i int) api.InstallationSpec {
	bp := &api.BlueprintSpec{
		Exports:          []api.ParameterDefinition{{Name: "out", Schema: json.RawMessage(`{"type":"integer"}`)}},
		DeployExecutions: []api.TemplateExecutor{{Name: "items", Template: "deployItems:\n- name: a\n  type: mock\n  config: {phase: Succeeded}\n"}},
		ExportExecutions: []api.TemplateExecutor{{Name: "out", Template: "exports:\n  out: {{ add1 (.imports.in | default 0) }}\n"}},
	}
	spec := api.InstallationSpec{
		Blueprint: api.BlueprintReference{Inline: bp},
		Exports:   api.InstallationExports{Data: []api.DataExport{{Name: "out", DataRef: fmt.Sprintf("chain%d-%d", iter, i)}}},
	}
	if i > 0 {
		bp.Imports = []api.ParameterDefinition{{Name: "in", Schema: json.RawMessage(`{"type":"integer"}`)}}
		spec.Imports.Data = []api.DataImport{{Name: "in", DataRef: fmt.Sprintf("chain%d-%d", iter, i-1)}}
	}
	return spec
}
