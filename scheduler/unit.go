package scheduler

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// Where a unit's event data lives in its workspace (files mode 0600).
const (
	eventFile  = ".cairn/event.json"
	secretsDir = ".cairn/secrets"
	caFile     = ".cairn/ca.crt"
)

// wrapper sets the variables that name files of the workspace (whose
// absolute path only the runtime knows, in CAIRN_WORKSPACE) and runs the
// command in its place.
//
// caWrapper, put before it when the API has a CA file, points CAIRN_CA_FILE
// at the unit's own copy: a unit runs as a user of its own and cannot read
// the server's files.
const caWrapper = `CAIRN_CA_FILE="$CAIRN_WORKSPACE/` + caFile + `"; export CAIRN_CA_FILE; `

const wrapper = `CAIRN_EVENT_FILE="$CAIRN_WORKSPACE/` + eventFile + `"; CAIRN_SECRETS_DIR="$CAIRN_WORKSPACE/` + secretsDir + `"; ` +
	`export CAIRN_EVENT_FILE CAIRN_SECRETS_DIR; exec "$0" "$@"`

// UnitInput is what a worker's or job's unit is built from.
type UnitInput struct {
	Event *api.Event
	// Job is the job's name; empty for the worker.
	Job  string
	Spec api.WorkerSpec
	// Secrets are the event's secrets: the project's secrets as copied at
	// creation.
	Secrets map[string][]byte
	// Token is the unit's own token (CAIRN_TOKEN), minted for it and
	// registered for its event by hash: it is nowhere else.
	Token string
	// Server is the API's URL (CAIRN_SERVER), and CAFile the CA file its
	// certificate verifies with, copied into the unit's files (CAIRN_CA_FILE
	// names the copy), when not "".
	Server string
	CAFile string
	// Path is the PATH of units whose spec sets none.
	Path string
}

// StartError is a unit that cannot be started at all (its command is not
// found): the worker or job fails with Reason.
type StartError struct{ Reason string }

func (e *StartError) Error() string { return e.Reason }

// UnitSpec builds the runtime spec of a worker's (Job "") or job's unit:
// its command (looked up in its PATH first, so a missing command fails
// with a reason rather than starting at all), its environment (the spec's,
// PATH, and CAIRN_SERVER, CAIRN_CA_FILE, CAIRN_TOKEN, CAIRN_NAMESPACE, CAIRN_EVENT,
// CAIRN_EVENT_FILE, CAIRN_SECRETS_DIR, CAIRN_WORKSPACE, and CAIRN_JOB for a
// job), and its files: the event as JSON, one file per secret key and a
// copy of the CA file, each mode 0600 in its own workspace. Errors:
// *StartError, or an error reading the CA file.
func UnitSpec(in UnitInput) (runtime.Spec, error) {
	ev := in.Event
	id := api.WorkerUnitID(ev.UID)
	if in.Job != "" {
		id = api.JobUnitID(ev.UID, in.Job)
	}
	env := map[string]string{"PATH": in.Path}
	maps.Copy(env, in.Spec.Env)
	cmd, err := lookPath(in.Spec.Command[0], env["PATH"])
	if err != nil {
		return runtime.Spec{}, err
	}
	env["CAIRN_SERVER"] = in.Server
	env["CAIRN_TOKEN"] = in.Token
	env["CAIRN_NAMESPACE"] = ev.Namespace
	env["CAIRN_EVENT"] = ev.Name
	if in.Job != "" {
		env["CAIRN_JOB"] = in.Job
	}
	raw, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return runtime.Spec{}, fmt.Errorf("scheduler: encode event %s: %w", ev.Name, err)
	}
	files := map[string][]byte{eventFile: raw}
	script := wrapper
	if in.CAFile != "" {
		ca, err := os.ReadFile(in.CAFile)
		if err != nil {
			return runtime.Spec{}, fmt.Errorf("scheduler: read the API's CA for %s: %w", id, err)
		}
		files[caFile] = ca
		script = caWrapper + wrapper
	}
	for k, v := range in.Secrets {
		files[secretsDir+"/"+k] = v
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	argv := append([]string{"/bin/sh", "-c", script, cmd}, in.Spec.Command[1:]...)
	return runtime.Spec{ID: id, Argv: argv, Env: envList, WorkspaceEnv: "CAIRN_WORKSPACE", Files: files, Dir: in.Spec.Workspace}, nil
}

// newUnitToken mints a token for one unit (256 bits from crypto/rand, in
// hex) and returns it with its hash (hex SHA-256, as the server registers
// tokens: api.EventTokenRequest). It fails only when the system's random
// source does.
func newUnitToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("scheduler: mint a unit token: %w", err)
	}
	token = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:]), nil
}

// lookPath finds name as exec.LookPath would in the PATH path, without the
// environment of this process.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if executable(name) {
			return name, nil
		}
		return "", &StartError{Reason: fmt.Sprintf("command %q does not exist or is not executable", name)}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); executable(p) {
			return p, nil
		}
	}
	return "", &StartError{Reason: fmt.Sprintf("command %q not found in PATH", name)}
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
