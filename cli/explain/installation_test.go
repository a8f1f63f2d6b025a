package explain_test

import (
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestExplain_InstallationSaysWhichSiblingItWaitsForAndWhichItemFailed runs
// every controller of the server: while the app waits for the database,
// `cairn explain installation/shop-app` names the import and the sibling;
// once the app's deploy item failed, it names the item and its error.
func TestExplain_InstallationSaysWhichSiblingItWaitsForAndWhichItemFailed(t *testing.T) {
	d, _ := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	r := clitest.RunContext(t.Context(), t, d.ClientConfig(), clitest.Cmd{Args: []string{"apply", "-f", "-", "-n", "demo"}, Stdin: `
apiVersion: cairn.dev/v1alpha1
kind: Namespace
metadata: {name: demo}
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: shop, namespace: demo}
spec:
  blueprint:
    inline:
      subinstallations:
      - name: database
        blueprint:
          inline:
            exports: [{name: connection}]
            deployExecutions:
            - name: items
              template: "deployItems: [{name: db, type: mock, config: {delay: 3s, export: {port: 5432}}}]"
            exportExecutions:
            - name: out
              template: "exports: {connection: {{ .deployItems.db.exports | toJson }}}"
        exports: {data: [{name: connection, dataRef: db}]}
      - name: app
        blueprint:
          inline:
            imports: [{name: db}]
            deployExecutions:
            - name: items
              template: "deployItems: [{name: web, type: mock, config: {phase: Failed}}]"
        imports: {data: [{name: db, dataRef: db}]}
`}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	explain := func(what string, want ...string) {
		t.Helper()
		var out string
		testkit.Eventually(t, 60*time.Second, "explain "+what+" to say "+strings.Join(want, ", "), func() bool {
			res := clitest.Run(t, d.ClientConfig(), "explain", what, "-n", "demo")
			out = res.Out + res.Err
			for _, w := range want {
				if !strings.Contains(out, w) {
					return false
				}
			}
			return res.Error == nil
		})
		t.Logf("cairn explain %s:\n%s", what, out)
	}
	explain("installation/shop-app", "PendingDependencies: import db waits for sibling shop-database (Progressing)")
	explain("installation/shop-app", "Failed", "execution shop-app is Failed: deploy item web failed")
	explain("installation/shop", "installation shop-app is Failed")
}
