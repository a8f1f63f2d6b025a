package cairn_test

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "cairn.dev/cairn/"

// allowed lists, per package (by path prefix under the module), the cairn
// packages it may import directly. Dependencies point down the layers of
// the design: store → registry → server → client → controllers → process
// → cli. The wire types (api) and the caller (identity) import nothing of
// cairn's, and the client side never imports the server.
var allowed = map[string][]string{
	"api":        {},
	"identity":   {},
	"store":      {"store"},
	"registry":   {"api", "identity", "registry", "store"},
	"kinds":      {"api", "registry"},
	"auth":       {"api", "identity", "store"},
	"server":     {"api", "auth", "identity", "registry", "kinds", "store", "server"},
	"client":     {"api", "identity", "registry"},
	"informer":   {"api", "client"},
	"controller": {"api", "client", "informer"},
	"gc":         {"api", "client", "controller", "informer"},
	"leader":     {},
	"daemon":     {"api", "auth", "client", "gc", "kinds", "leader", "registry", "server", "store"},
	"cli":        {"api", "client", "cli", "daemon"},
	"cmd":        {"cli"},
	// The watch cache is the registry's machinery, told by the registry
	// what it needs: it knows nothing of the registry itself.
	"registry/internal/watchcache": {"api", "store"},
}

// testOnly may additionally be imported by tests.
var testOnly = []string{"store/storetest", "server/servertest", "cli/clitest", "kinds", "registry", "server", "store", "daemon", "leader", "client", "informer", "controller", "gc", "identity", "auth"}

func layerOf(rel string) string { return strings.SplitN(rel, "/", 2)[0] }

// rulesOf returns the rules of package rel: those of the longest path in
// allowed that is rel or one of its parents.
func rulesOf(rel string) ([]string, bool) {
	for p := rel; ; {
		if rules, ok := allowed[p]; ok {
			return rules, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return nil, false
		}
		p = p[:i]
	}
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
		if err != nil {
			return nil // no Go files here
		}
		rel := filepath.ToSlash(path)
		layer := layerOf(rel)
		rules, ok := rulesOf(rel)
		if !ok {
			if rel != "." && layer != "bench" {
				t.Errorf("package %s has no layer in the allowed table: add it", rel)
			}
			return nil
		}
		check := func(imports []string, extra []string) {
			for _, imp := range imports {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				if !slices.Contains(rules, layerOf(dep)) && !slices.Contains(extra, dep) && !slices.Contains(extra, layerOf(dep)) {
					t.Errorf("%s imports %s: it may import only %v", rel, dep, rules)
				}
			}
		}
		check(pkg.Imports, nil)
		// A package's external tests may also import the package itself.
		check(append(pkg.TestImports, pkg.XTestImports...), append(slices.Clone(testOnly), rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
