package container_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

const pwValue = "s3cr3t-pa55w0rd"

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// secretItem is a container item whose env and imports reference the
// Secret key db/password, running script.
func secretItem(name, script string) api.DeployItemTemplate {
	ref := api.SecretReference{Name: "db", Key: "password"}.String()
	raw, _ := json.Marshal(map[string]any{"command": []string{"sh", "-c", script},
		"env": map[string]string{"PW": ref, "URL": "pg://app:" + ref + "@db"}, "imports": map[string]any{"password": ref}})
	return api.DeployItemTemplate{Name: name, Type: "container", Config: raw}
}

// TestContainer_SecretReferencesReachOnlyTheUnitsFilesAndEnvironment: the
// command finds the Secret's value in its environment (alone and inside a
// string) and in its 0600 imports file; the item (spec and status) holds
// only the reference; a failing command's output quoting the value is
// redacted in lastError.
func TestContainer_SecretReferencesReachOnlyTheUnitsFilesAndEnvironment(t *testing.T) {
	e := start(t)
	e.Create(testkit.Secret(deploytest.NS, "db", map[string]string{"password": pwValue}))
	e.Execution("app", []api.DeployItemTemplate{
		// The command knows the value only by its hash.
		secretItem("ok", `sum() { printf %s "$1" | sha256sum | cut -c1-64; }
[ "$(sum "$PW")" = `+sha(pwValue)+` ] && [ "$(sum "$URL")" = `+sha("pg://app:"+pwValue+"@db")+` ] &&
[ "$(sed 's/.*"password":"\([^"]*\)".*/\1/' "$CAIRN_IMPORTS" | head -1 | tr -d '\n' | sha256sum | cut -c1-64)" = `+sha(pwValue)+` ] &&
[ "$(stat -c %a "$CAIRN_IMPORTS")" = 600 ] || { echo "values not handed over"; exit 1; }`),
		secretItem("leaky", `echo "the password is $PW"; exit 3`),
	})
	ok := e.WaitItem("app-ok", "finished", func(d api.DeployItem) bool { return d.Status.Phase.Completed() })
	if ok.Status.Phase != api.DeploySucceeded {
		t.Fatalf("item ok: %s %+v: the command did not find the values", ok.Status.Phase, ok.Status.LastError)
	}
	leaky := e.WaitItem("app-leaky", "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
	if le := leaky.Status.LastError; le == nil || !strings.Contains(le.Message, "the password is <redacted>") {
		t.Fatalf("item leaky: lastError %+v, want the output with the value redacted", le)
	}
	for _, name := range []string{"app-ok", "app-leaky"} {
		d, _ := deploytest.Get[api.DeployItem](e, api.KindDeployItem, name)
		raw, _ := json.Marshal(d)
		if strings.Contains(string(raw), pwValue) || strings.Contains(e.Explain(api.KindDeployItem, name), pwValue) {
			t.Fatalf("item %s holds the Secret's value:\n%s", name, raw)
		}
		if !strings.Contains(string(raw), "((cairn.dev/secret:db/password))") {
			t.Fatalf("item %s lost its reference: %s", name, raw)
		}
	}
}

// TestContainer_UnresolvableReferencesFailTheItemSayingWhy: a reference
// in a command line, to a missing Secret or to a missing key fails the
// item, naming the field or the Secret; nothing runs.
func TestContainer_UnresolvableReferencesFailTheItemSayingWhy(t *testing.T) {
	e := start(t)
	e.Create(testkit.Secret(deploytest.NS, "db", map[string]string{"password": pwValue}))
	inCommand := api.DeployItemTemplate{Name: "argv", Type: "container",
		Config: json.RawMessage(`{"command":["sh","-c","echo ((cairn.dev/secret:db/password))"]}`)}
	missing := api.DeployItemTemplate{Name: "missing", Type: "container",
		Config: json.RawMessage(`{"command":["true"],"env":{"PW":"((cairn.dev/secret:nope/password))"}}`)}
	noKey := api.DeployItemTemplate{Name: "nokey", Type: "container",
		Config: json.RawMessage(`{"command":["true"],"env":{"PW":"((cairn.dev/secret:db/pin))"}}`)}
	e.Execution("bad", []api.DeployItemTemplate{inCommand, missing, noKey})
	for name, want := range map[string]struct {
		reason api.ErrorReason
		says   string
	}{
		"bad-argv":    {api.ReasonInvalidConfig, "spec.config.command[2] holds a Secret reference"},
		"bad-missing": {api.ReasonSecretNotFound, "Secret nope does not exist in namespace " + deploytest.NS},
		"bad-nokey":   {api.ReasonSecretNotFound, `Secret db in namespace ` + deploytest.NS + ` has no key "pin"`},
	} {
		d := e.WaitItem(name, "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
		if le := d.Status.LastError; le == nil || le.Reason != want.reason || !strings.Contains(le.Message, want.says) {
			t.Errorf("item %s: lastError %+v, want %s saying %q", name, le, want.reason, want.says)
		}
	}
}
