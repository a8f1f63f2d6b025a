package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// restartTree is a three-level installation tree whose container deploy
// items each append a line to a file of their own under %[1]s, so a test
// can count how often each ran; the leaf takes a while.
const restartTree = `apiVersion: cairn.dev/v1alpha1
kind: Namespace
metadata: {name: crash}
---
apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: leaf, namespace: crash}
spec:
  imports: [{name: greeting}]
  exports: [{name: said}]
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: say
        type: container
        config:
          command: [sh, -c, 'echo run >> %[1]s/leaf; sleep 2; printf "\"{{ .imports.greeting }}\"" > "$CAIRN_EXPORTS"']
  exportExecutions:
  - name: out
    template: "exports: {said: {{ .deployItems.say.exports | toJson }}}"
---
apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: middle, namespace: crash}
spec:
  imports: [{name: greeting}]
  exports: [{name: said}]
  subinstallations:
  - name: leaf
    blueprint: {ref: leaf}
    imports: {data: [{name: greeting, dataRef: greeting}]}
    exports: {data: [{name: said, dataRef: leaf-said}]}
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: prepare
        type: container
        config: {command: [sh, -c, 'echo run >> %[1]s/middle']}
  exportExecutions:
  - name: out
    template: "exports: {said: {{ .subinstallations.leaf.exports.said | quote }}}"
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: top, namespace: crash}
spec:
  imports: {data: [{name: greeting, value: hello}]}
  exports: {data: [{name: said, dataRef: top-said}]}
  blueprint:
    inline:
      imports: [{name: greeting}]
      exports: [{name: said}]
      subinstallations:
      - name: mid
        blueprint: {ref: middle}
        imports: {data: [{name: greeting, dataRef: greeting}]}
        exports: {data: [{name: said, dataRef: mid-said}]}
      deployExecutions:
      - name: items
        template: |
          deployItems:
          - name: base
            type: container
            config: {command: [sh, -c, 'echo run >> %[1]s/top']}
      exportExecutions:
      - name: out
        template: "exports: {said: {{ .subinstallations.mid.exports.said | quote }}}"
`

// TestApply_KilledServerConvergesATreeAfterRestart: a `cairn server`
// process killed with SIGKILL while a three-level tree is being deployed
// converges to the same result when started again on its data dir, with
// every container deploy item run once.
func TestApply_KilledServerConvergesATreeAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the cairn binary")
	}
	bin := clitest.BuildCairn(t)
	home, data, runs := t.TempDir(), filepath.Join(t.TempDir(), "data"), testkit.UnitWritableDir(t)
	start := func() (*clitest.Proc, client.Interface, string) {
		cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", data, "--leader-ttl", "1s"},
			clitest.RuntimeFlags(t, filepath.Join(filepath.Dir(data), "runtime"))...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		p := clitest.Start(t, cmd)
		b, err := os.ReadFile(filepath.Join(data, "admin.token"))
		if err != nil {
			t.Fatal(err)
		}
		token := strings.TrimSpace(string(b))
		c, err := client.NewHTTP(client.Config{Server: p.URL, Token: token, CAFile: filepath.Join(data, daemon.CAFileName)})
		if err != nil {
			t.Fatal(err)
		}
		return p, c, token
	}
	p, c, token := start()
	r := clitest.RunContext(context.Background(), t, client.Config{Server: p.URL, Token: token, CAFile: filepath.Join(data, daemon.CAFileName)}, clitest.Cmd{Args: []string{"apply", "-f", "-"},
		Stdin: fmt.Sprintf(restartTree, runs)}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	ctx := context.Background()
	// Kill the server while the leaf's deploy item runs.
	testkit.EventuallyNil(t, 60*time.Second, "the leaf's command running", func() error {
		if _, err := os.Stat(filepath.Join(runs, "leaf")); err != nil {
			return err
		}
		return nil
	})
	p.Kill(t)

	_, c, _ = start()
	testkit.EventuallyNil(t, 90*time.Second, "the tree Succeeded after the restart", func() error {
		for _, n := range []string{"top-mid-leaf", "top-mid", "top"} {
			in, err := client.For[*api.Installation](c).Get(ctx, "crash", n)
			if err != nil {
				return err
			}
			if in.Status.Phase != api.InstallationSucceeded {
				return fmt.Errorf("%s is %s (%+v)", n, in.Status.Phase, in.Status.LastError)
			}
		}
		return nil
	})
	do, err := client.For[*api.DataObject](c).Get(ctx, "crash", "top-said")
	if err != nil {
		t.Fatal(err)
	}
	if string(do.Data) != `"hello"` {
		t.Fatalf("the root's export is %s", do.Data)
	}
	for _, n := range []string{"top", "middle", "leaf"} {
		b, err := os.ReadFile(filepath.Join(runs, n))
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s never ran", n)
			continue
		}
		if got := strings.Count(string(b), "run"); got != 1 {
			t.Errorf("the %s deploy item ran %d times", n, got)
		}
	}
}
