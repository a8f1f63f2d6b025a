package event_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
)

func TestEventCreate_MissingNamespaceOrProjectIsNamed(t *testing.T) {
	d, _ := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{})})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-n", "missing", "--source", "s", "--type", "t"}, `namespace "missing" does not exist`},
		{[]string{"-n", "missing", "--project", "p", "--source", "s", "--type", "t"}, `namespace "missing" does not exist`},
		{[]string{"--project", "nope", "--source", "s", "--type", "t"}, `project "nope" not found in namespace "default"`},
	}
	for _, tt := range tests {
		r := clitest.Run(t, d.ClientConfig(), append([]string{"event", "create"}, tt.args...)...)
		if r.Error == nil || !strings.Contains(r.Error.Error(), tt.want) {
			t.Errorf("event create %v: out %q, err %v; want an error with %q", tt.args, r.Out, r.Error, tt.want)
		}
	}
}
