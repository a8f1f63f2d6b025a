package serve

import (
	"testing"
	"time"

	"cairn.dev/cairn/daemon"
)

func TestMemoryFlags_ZeroMeansNoLimitAndNegativeIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		flags   memoryFlags
		want    daemon.Options
		wantErr bool
	}{
		{"defaults", memoryFlags{400, 1000, 30 * time.Second},
			daemon.Options{MaxRequestsInflight: 400, MaxWatches: 1000, WriteTimeout: 30 * time.Second}, false},
		{"zero: no limit", memoryFlags{0, 0, 0},
			daemon.Options{MaxRequestsInflight: -1, MaxWatches: -1, WriteTimeout: -1}, false},
		{"negative cap", memoryFlags{-1, 10, time.Second}, daemon.Options{}, true},
		{"negative timeout", memoryFlags{1, 10, -time.Second}, daemon.Options{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got daemon.Options
			err := tc.flags.apply(&got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("apply: %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (got.MaxRequestsInflight != tc.want.MaxRequestsInflight ||
				got.MaxWatches != tc.want.MaxWatches || got.WriteTimeout != tc.want.WriteTimeout) {
				t.Fatalf("options %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMemoryFlags_DefaultsAreTheServers(t *testing.T) {
	cmd := New()
	for name, want := range map[string]string{
		"max-requests-inflight": "400", "max-watches": "1000", "write-timeout": "30s",
	} {
		if f := cmd.Flags().Lookup(name); f == nil || f.DefValue != want {
			t.Errorf("--%s default %v, want %s", name, f, want)
		}
	}
}
