package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricSum gathers g and sums the samples of the counter or gauge name
// whose labels include every name, value pair of labels; found reports
// whether g has the metric at all (a vector with no sample yet has none).
// It fails the test when g cannot gather.
func MetricSum(t testing.TB, g prometheus.Gatherer, name string, labels ...string) (sum float64, found bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		found = true
	samples:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				matched := false
				for _, l := range m.GetLabel() {
					matched = matched || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !matched {
					continue samples
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum, found
}
