package cairn_test

import (
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "cairn.dev/cairn/"

// allowed lists, per package path under the module, the cairn packages it
// may import directly. A package follows the entry of the longest path in
// this table that is the package's own or one of its parents ("cli" covers
// cli/get; "client/local" has its own entry, apart from "client"), and an
// import names the entry its path falls under in the same way. A package
// no entry covers fails the test: add it to the table.
//
// Dependencies point down the layers of the design: store → registry →
// server → client → controllers → process → cli. The wire types (api) and
// the caller (identity) import nothing of cairn's. The client side never
// links the store: see storeSide.
var allowed = map[string][]string{
	"api":      {},
	"identity": {},
	// The certificates of TLS: a CA and the serving certificates it issues.
	"pki":               {},
	"internal/privfile": {},
	// The pace of Go's collector in a server process.
	"internal/gopace":              {},
	"store":                        {"store"},
	"registry":                     {"api", "authz", "identity", "store", "registry/internal/watchcache", "registry/internal/usage", "internal/privfile", "openapi"},
	"registry/internal/watchcache": {"api", "store"},
	"registry/internal/usage":      {"store"},
	"kinds":                        {"api", "authz", "identity", "registry", "cleaner/condition", "blueprint", "deployer/kube/config", "openapi"},
	"auth":                         {"api", "identity", "store", "internal/privfile"},
	"authz":                        {"api", "identity"},
	"server":                       {"api", "auth", "authz", "column", "console", "identity", "logsource", "pki", "registry", "kinds", "store", "server", "trace"},
	// The web console's embedded assets: a client of the public API, in
	// the browser; the Go side only serves files.
	"console": {},
	// A kind's printer columns rendered: cairn get's cells and the
	// server's Tables.
	"column":       {"api"},
	"client":       {"api", "internal/privfile"},
	"client/local": {"api", "client", "identity", "registry"},
	"informer":     {"api", "client"},
	"controller":   {"api", "client", "informer", "trace"},
	"trace":        {"api"},
	"lease":        {"api", "client", "conflict"},
	"manager":      {"api", "client", "identity", "informer", "controller", "pki", "trace", "lease", "runtime"},
	// The cleaner's conditions: pure CEL, shared by admission (kinds) and
	// the controller.
	"cleaner/condition": {},
	"cleaner":           {"api", "client", "controller", "informer", "manager", "trace", "cleaner/condition"},
	"commitstatus":      {"api", "controller", "informer", "manager", "trace"}, // GitHub commit statuses of github Gateways' Events
	"controllers":       {"api", "client", "manager", "gc", "cleaner", "commitstatus", "scheduler", "informer", "controller", "trace", "execution", "deployitem", "deployer", "installation", "target"},
	"scheduler":         {"api", "client", "controller", "informer", "manager", "runtime", "trace", "unitlog"},
	"gc":                {"api", "conflict", "client", "controller", "informer", "manager", "trace"},
	// runtime/kubernetes re-reads its Secret records on Conflict at
	// conflict's pace.
	"runtime": {"runtime", "conflict"},
	// The event service: the rules of the event endpoints, over the registry.
	"event": {"api", "conflict", "auth", "authz", "identity", "kinds", "logsource", "registry", "runtime", "store"},
	// The Gateways' webhook endpoint: deliveries checked and mapped, then
	// fanned out by the event service.
	"gateway":      {"api", "event", "identity", "registry"},
	"etcdelection": {},
	// The logs of units served by any API server: the runtime's, the
	// kept tails (read through the registry) or the leader's.
	"logsource": {"api", "identity", "registry", "runtime"},
	// The tails of units' output kept through the API by the controllers
	// that ran them.
	"unitlog": {"api", "client", "runtime"},
	// The deployment controllers (the deployer entry covers its types).
	"execution":  {"api", "client", "controller", "informer", "manager", "trace"},
	"deployitem": {"api", "client", "controller", "informer", "manager", "trace"},
	// The target controller: the reachability of kubernetes-cluster
	// Targets, and the cache of their clients deployers take.
	"target":   {"api", "client", "controller", "informer", "manager", "trace"},
	"deployer": {"api", "conflict", "client", "controller", "informer", "manager", "trace", "runtime", "deployer", "deployer/kube/config", "target", "unitlog"},
	// deployer/kube/config: the Kubernetes deploy item configs, pure, shared with admission.
	"deployer/kube/config": {},
	// The installation controller and the blueprint rendering it (and
	// admission) uses: pure functions over the wire types.
	"installation": {"api", "conflict", "blueprint", "client", "controller", "informer", "manager", "trace"},
	"blueprint":    {"api"},
	// The OpenAPI documents, derived from the kinds' Go types (plain data:
	// never the registry or the server).
	"openapi":                  {"api", "openapi/internal/docgen"},
	"openapi/internal/docgen":  {},
	"openapi/internal/gendocs": {"openapi/internal/docgen"},
	// The process wiring: it builds every layer below the CLI.
	"daemon": {"api", "auth", "authz", "client", "client/local", "controllers", "event", "gateway", "gc", "identity", "kinds", "pki",
		"etcdelection", "lease", "manager", "registry", "runtime", "runtime/local", "server", "store", "trace", "internal/privfile"},
	"cli": {"api", "client", "cli", "column", "conflict", "controllers", "daemon", "deployitem", "manager", "pki", "runtime", "runtime/local", "trace",
		"internal/privfile", "internal/gopace"},
	"cmd":   {"cli"},
	"bench": {}, // benchmarks: tests only
	// Kubernetes clients (kubectl, client-go, controller-runtime) driven
	// against real servers: tests only.
	"kubecompat": {},

	// A read-modify-write run again when it lost a race (Conflict): below
	// the controllers and the event service, which use it.
	"conflict": {"api"},

	// Test support (see testSupport): kits under internal/testkit, and
	// the *test packages beside what they serve.
	"store/storetest":   {"store"},
	"server/servertest": {"api", "auth", "authz", "client", "identity", "kinds", "pki", "registry", "server", "store", "store/storetest"},
	"cli/clitest":       {"cli", "client", "daemon", "internal/testkit"},
	"internal/testkit":  {"api", "client", "identity", "pki", "registry", "kinds", "server/servertest", "store/storetest"},
	"internal/testkit/deploytest": {"api", "client", "client/local", "deployitem", "gc", "identity", "internal/testkit", "manager",
		"runtime", "server/servertest", "trace"},
	"internal/testkit/failovertest": {"api", "client", "client/local", "gc", "identity", "internal/testkit", "manager", "server/servertest"},
	// A real Kubernetes API (etcd, kube-apiserver, kube-controller-manager
	// processes) for the tests of what deploys to Kubernetes.
	"internal/testkit/kubetest": {"api", "client"},
	// A real headless chromium for the console's tests.
	"internal/testkit/browsertest": {},
}

// testSupport reports whether entry helps tests: a kit under
// internal/testkit, or a package named for what it serves tests of
// (store/storetest, server/servertest, cli/clitest). Only tests and other
// test support may import one; the rule is the name, so a new kit needs
// no list.
func testSupport(entry string) bool {
	return under(entry, "internal/testkit") || strings.HasSuffix(entry[strings.LastIndex(entry, "/")+1:], "test")
}

// testOnly may additionally be imported by tests, as may test support.
var testOnly = []string{
	"api", "kinds", "registry", "server", "store", "daemon", "etcdelection", "client", "client/local", "informer",
	"controller", "gc", "cleaner", "cleaner/condition", "identity", "auth", "authz", "trace", "lease", "manager", "controllers", "runtime",
	"execution", "installation", "deployitem", "deployer", "internal/gopace", "target", "column",
	// The event service, for tests of what creates Events by fan-out.
	"event"}

// storeSide lists the only packages that may link the store, by importing
// registry, store or server. Every other package — the client, informer,
// controller, manager, lease, trace, runtime, gc, every controller, and any
// new package — is an API client and may not, whatever its table entry
// says; its tests may use the test servers (server/servertest,
// store/storetest, internal/testkit) but not server or store themselves.
var storeSide = []string{"store", "registry", "event", "gateway", "logsource", "registry/internal/watchcache", "registry/internal/usage", "kinds", "auth", "authz", "server", "client/local", "daemon",
	"cli", "cmd", "bench", "store/storetest", "server/servertest", "cli/clitest", "internal/testkit"}

// storePackages are what the client side may not import.
var storePackages = []string{"registry", "store", "server"}

// under reports whether path is prefix or lies below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// entryOf returns the table entry that covers path: the longest key that
// is path or one of its parents.
func entryOf(path string) (string, bool) {
	best := ""
	for k := range allowed {
		if under(path, k) && len(k) > len(best) {
			best = k
		}
	}
	return best, best != ""
}

// violations checks one package (rel, relative to the module) with its
// non-test and test imports (full import paths) and returns what breaks
// the rules.
func violations(rel string, imports, testImports []string) []string {
	entry, ok := entryOf(rel)
	if !ok {
		return []string{fmt.Sprintf("package %s has no entry in the allowed table: add it to the table", rel)}
	}
	rules := allowed[entry]
	storeSided := slices.Contains(storeSide, entry)
	var out []string
	check := func(imps []string, test bool) {
		for _, imp := range imps {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			depEntry, ok := entryOf(dep)
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s imports %s, which has no entry in the allowed table", rel, dep))
				continue
			case !storeSided && !testSupport(depEntry) &&
				slices.ContainsFunc(storePackages, func(p string) bool {
					// Tests of client-side packages may define test kinds
					// with the registry, never run a server or store of
					// their own.
					return under(depEntry, p) && !(test && p == "registry")
				}):
				out = append(out, fmt.Sprintf("%s imports %s: the client side never links the store (only %v may)", rel, dep, storeSide))
				continue
			case !test && testSupport(depEntry) && !testSupport(entry):
				out = append(out, fmt.Sprintf("%s imports %s: only tests may import test support", rel, dep))
				continue
			}
			if slices.Contains(rules, depEntry) || (test && (testSupport(depEntry) || slices.Contains(testOnly, depEntry) || dep == rel)) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: %s may import only %v", rel, dep, entry, rules))
		}
	}
	check(imports, false)
	check(testImports, true) // a package's external tests may also import the package itself
	return out
}

func TestLayers_DependenciesPointDownward(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil || path == "." {
			return nil // no Go files here, or this test
		}
		for _, v := range violations(filepath.ToSlash(path), pkg.Imports, append(pkg.TestImports, pkg.XTestImports...)) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLayers_RulesFollowTheLongestEntry checks the checker on made-up
// packages, so that a rule that stopped biting would be noticed.
func TestLayers_RulesFollowTheLongestEntry(t *testing.T) {
	m := func(p ...string) []string {
		for i := range p {
			p[i] = module + p[i]
		}
		return p
	}
	tests := []struct {
		name          string
		rel           string
		imports, test []string
		wantViolation string // "" for none
	}{
		{"client may not link the registry", "client", m("registry"), nil, "never links the store"},
		{"client may not import identity", "client", m("identity"), nil, "client may import only"},
		{"client/local may", "client/local", m("api", "client", "identity", "registry"), nil, ""},
		{"a controller may not import the store", "gc", m("store"), nil, "never links the store"},
		{"nor a server's insides", "informer", m("registry/internal/watchcache"), nil, "never links the store"},
		{"a future controller under controllers", "controllers/cleaner", m("registry"), nil, "never links the store"},
		{"a future controller may use the manager", "controllers/cleaner", m("manager", "client", "trace"), nil, ""},
		{"a sub-package follows its parent's entry", "cli/explain", m("trace", "client"), nil, ""},
		{"informer may not import client/local", "informer", m("client/local"), nil, "informer may import only"},
		{"tests may use the test server", "informer", nil, m("server/servertest", "client/local", "identity"), ""},
		{"tests may define test kinds", "gc", nil, m("registry", "kinds", "internal/testkit"), ""},
		{"client-side tests run no server of their own", "client", nil, m("server"), "never links the store"},
		{"nor a store", "controller", nil, m("store"), "never links the store"},
		{"only tests import test support", "daemon", m("internal/testkit"), nil, "only tests may import test support"},
		{"every kit under internal/testkit is test support", "deployer/helm", m("internal/testkit/kubetest"), nil, "only tests may import test support"},
		{"so is a package named for what it serves tests of", "cli/get", m("cli/clitest"), nil, "only tests may import test support"},
		{"tests may use any kit", "deployer/helm", nil, m("internal/testkit/kubetest"), ""},
		{"unknown packages must be added", "gadget", nil, nil, "add it to the table"},
		{"a name that only starts like an entry", "clientx", nil, nil, "add it to the table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(violations(tt.rel, tt.imports, tt.test), "\n")
			if tt.wantViolation == "" && got != "" || !strings.Contains(got, tt.wantViolation) {
				t.Errorf("violations = %q, want %q", got, tt.wantViolation)
			}
		})
	}
}
