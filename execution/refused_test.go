package execution_test

import (
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// A write the API refuses (here: the namespace is at its object limit, so
// the deploy item cannot be created) is in the execution's lastError,
// naming the limit; once there is room, the retry creates the item.
func TestExecution_RefusedDeployItemCreateIsInLastErrorNamingTheLimit(t *testing.T) {
	e := start(t)
	e.Create(testkit.Object(api.KindNamespace, "", "team", testkit.Spec(`{"limits":{"objects":1}}`)))
	x := deploytest.Object(api.KindExecution, "app", &api.Execution{Spec: api.ExecutionSpec{DeployItems: []api.DeployItemTemplate{deploytest.Mock("a", `{}`)}}})
	x.Namespace = "team"
	e.Create(x)
	get := func() api.Execution {
		var out api.Execution
		obj, err := e.C.Get(e.Ctx(), api.KindExecution, "team", "app")
		if err == nil {
			err = obj.Into(&out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	testkit.EventuallyNil(t, deploytest.Wait, "lastError naming the refused write", func() error {
		le := get().Status.LastError
		if le == nil || le.Reason != "WriteRefused" || !strings.Contains(le.Message, "spec.limits.objects") ||
			!strings.Contains(le.Message, "Forbidden") || !strings.Contains(le.Message, "app-a") {
			return fmt.Errorf("lastError %+v", le)
		}
		return nil
	})
	if _, err := e.C.Patch(e.Ctx(), api.KindNamespace, "", "team", []byte(`{"spec":{"limits":{"objects":10}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, deploytest.Wait, "the item created and succeeded once there is room", func() error {
		st := get().Status
		if st.Phase != api.DeploySucceeded || st.LastError != nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}
