package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// BenchmarkExecutions10k: the execution half of BenchmarkInstallations10k
// on its own: 10,000 executions of the same three mock deploy items (b
// and c depend on a), created at once over HTTP. Reports the time until
// all are Succeeded, the store writes per converged execution, and the
// time until deleting them all has removed their deploy items and
// exports.
func BenchmarkExecutions10k(b *testing.B) {
	const n = 10000
	_, c := startDeployServer(b)
	ctx := context.Background()
	var spec api.ExecutionSpec
	if err := yaml.Unmarshal([]byte(threeItems), &spec); err != nil {
		b.Fatal(err)
	}
	for iter := 0; iter < b.N; iter++ {
		rv0, keys0 := revision(b, c), keysWritten(b)
		start := time.Now()
		concurrently(b, 32, n/32+1, func(w, i int) error {
			k := w*(n/32+1) + i
			if k >= n {
				return nil
			}
			obj, err := api.FromResource(&api.Execution{
				TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindExecution},
				ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("e%d-%d", iter, k), Namespace: "default",
					Labels: map[string]string{"bench": "deploy"}},
				Spec: spec,
			})
			if err != nil {
				return err
			}
			_, err = c.Create(ctx, obj)
			return err
		})
		awaitExecutions(b, c, fmt.Sprint(rv0), n, 10*time.Minute)
		converged := time.Since(start)
		b.ReportMetric(converged.Seconds(), "s/converge")
		b.ReportMetric((keysWritten(b)-keys0)/n, "writes/execution")
		b.ReportMetric(float64(revision(b, c)-rv0)/n, "txns/execution")

		start = time.Now()
		deleteAll(b, c, api.KindExecution, "bench=deploy")
		awaitNone(b, c, api.KindExecution, api.KindDeployItem, api.KindDataObject)
		b.ReportMetric(time.Since(start).Seconds(), "s/delete")
	}
}

// awaitExecutions waits for want executions to be Succeeded for their
// generation; a Failed one ends the benchmark.
func awaitExecutions(b *testing.B, c client.Interface, rv string, want int, timeout time.Duration) {
	b.Helper()
	awaitConverged(b, c, api.KindExecution, rv, want, timeout, func(o *api.Object) (bool, error) {
		var x api.Execution
		if o.Into(&x) != nil {
			return false, nil
		}
		if x.Status.Phase == api.DeployFailed {
			return false, fmt.Errorf("%+v", x.Status.LastError)
		}
		return x.Status.Phase == api.DeploySucceeded && x.Status.ObservedGeneration == x.Generation, nil
	})
}
