package installation_test

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// A write the API refuses (here: the namespace is at its object limit, so
// the Execution cannot be created) is in the installation's lastError,
// naming the limit; once there is room, the retry renders the execution.
func TestInstallation_RefusedExecutionCreateIsInLastErrorNamingTheLimit(t *testing.T) {
	e := start(t)
	if _, err := e.c.Create(e.ctx, testkit.Object(api.KindNamespace, "", "team", testkit.Spec(`{"limits":{"objects":1}}`))); err != nil {
		t.Fatal(err)
	}
	var obj api.Object
	if err := yaml.Unmarshal([]byte(singleYAML), &obj); err != nil {
		t.Fatal(err)
	}
	obj.Namespace = "team"
	if _, err := e.c.Create(e.ctx, &obj); err != nil {
		t.Fatal(err)
	}
	get := func() *api.Installation {
		in, err := client.For[*api.Installation](e.c).Get(e.ctx, "team", "one")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	testkit.EventuallyNil(t, wait, "lastError naming the refused write", func() error {
		le := get().Status.LastError
		if le == nil || le.Reason != "WriteRefused" || !strings.Contains(le.Message, "spec.limits.objects") ||
			!strings.Contains(le.Message, "Forbidden") || !strings.Contains(le.Message, "create execution one") {
			return fmt.Errorf("lastError %+v", le)
		}
		return nil
	})
	if _, err := e.c.Patch(e.ctx, api.KindNamespace, "", "team", []byte(`{"spec":{"limits":{"objects":10}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, wait, "the execution rendered once there is room", func() error {
		in := get()
		if in.Status.Phase != api.InstallationProgressing || in.Status.LastError != nil || in.Status.ExecutionRef != "one" {
			return fmt.Errorf("status %s", statusString(in))
		}
		return nil
	})
}
