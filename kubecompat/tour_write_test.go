package kubecompat_test

import (
	"strings"
	"testing"
	"time"
)

// The kubectl tour, continued: the commands that write, or must not.

func TestKubectl_DiffShowsTheChangeAndWritesNothing(t *testing.T) {
	c := startServer(t)
	c.must(t, "apply", "-f", file(t, leaseYAML("l", "alice")))
	rv := get(t, c, "leases", "", "l").GetResourceVersion()

	if r := c.kubectl(t, "diff", "-f", file(t, leaseYAML("l", "alice"))); r.code != 0 || r.out != "" {
		t.Errorf("diff without a change: %s", r)
	}
	r := c.kubectl(t, "diff", "-f", file(t, leaseYAML("l", "bob")))
	if r.code != 1 || !strings.Contains(r.out, "-  holderIdentity: alice") || !strings.Contains(r.out, "+  holderIdentity: bob") {
		t.Errorf("diff with a change: %s", r)
	}
	if got := get(t, c, "leases", "", "l"); got.GetResourceVersion() != rv || holder(t, c, "l") != "alice" {
		t.Errorf("diff wrote the lease: resourceVersion %s → %s", rv, got.GetResourceVersion())
	}
	// A new object is shown whole and not created.
	r = c.kubectl(t, "diff", "-f", file(t, leaseYAML("new", "carol")))
	if r.code != 1 || !strings.Contains(r.out, "+  holderIdentity: carol") {
		t.Errorf("diff of a new object: %s", r)
	}
	if get(t, c, "leases", "", "new") != nil {
		t.Error("diff created the new lease")
	}
}

func TestKubectl_ServerSideApplyConflictsUntilForced(t *testing.T) {
	c := startServer(t)
	out := c.must(t, "apply", "--server-side", "--field-manager=alice", "-f", file(t, leaseYAML("l", "alice")))
	if !strings.Contains(out, "lease.cairn.dev/l serverside-applied") {
		t.Errorf("apply --server-side: %q", out)
	}
	// Bob sets the field alice manages: a conflict naming alice.
	bob := file(t, leaseYAML("l", "bob"))
	r := c.kubectl(t, "apply", "--server-side", "--field-manager=bob", "-f", bob)
	if r.code == 0 || !strings.Contains(r.err, "conflict") || !strings.Contains(r.err, `"alice"`) || !strings.Contains(r.err, ".spec.holderIdentity") {
		t.Errorf("a conflicting apply: %s", r)
	}
	if h := holder(t, c, "l"); h != "alice" {
		t.Errorf("the conflicting apply wrote: holder %q", h)
	}
	// Alice applying her own value again is no conflict.
	c.must(t, "apply", "--server-side", "--field-manager=alice", "-f", file(t, leaseYAML("l", "alice")))

	c.must(t, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", bob)
	l := get(t, c, "leases", "", "l")
	if h := holder(t, c, "l"); h != "bob" {
		t.Errorf("after --force-conflicts the holder is %q", h)
	}
	owners := map[string]bool{}
	for _, m := range l.GetManagedFields() {
		if m.Operation == "Apply" && strings.Contains(string(m.FieldsV1.Raw), `"f:holderIdentity"`) {
			owners[m.Manager] = true
		}
	}
	if !owners["bob"] || owners["alice"] {
		t.Errorf("spec.holderIdentity is managed by %v, want bob alone", owners)
	}
}

// TestKubectl_DryRunWritesNothing runs every writing command with
// --dry-run=server: each must succeed, print its would-be result and
// leave the stored object as it was.
func TestKubectl_DryRunWritesNothing(t *testing.T) {
	c := startServer(t)
	c.must(t, "apply", "-f", file(t, leaseYAML("l", "alice")))
	changed, fresh := file(t, leaseYAML("l", "bob")), file(t, leaseYAML("fresh", "bob"))
	tests := []struct {
		name string
		args []string
		want string // in the output
	}{
		{"apply", []string{"apply", "-f", changed}, "configured (server dry run)"},
		{"apply new", []string{"apply", "-f", fresh}, "created (server dry run)"},
		{"apply --server-side", []string{"apply", "--server-side", "--force-conflicts", "-f", changed}, "serverside-applied (server dry run)"},
		{"create", []string{"create", "-f", fresh}, "created (server dry run)"},
		{"replace", []string{"replace", "-f", changed}, "replaced (server dry run)"},
		{"label", []string{"label", "lease", "l", "x=y"}, "labeled (server dry run)"},
		{"annotate", []string{"annotate", "lease", "l", "x=y"}, "annotated (server dry run)"},
		{"patch", []string{"patch", "lease", "l", "--type=merge", "-p", `{"spec":{"holderIdentity":"bob"}}`}, "patched"}, // kubectl patch never says "(server dry run)"
		{"delete", []string{"delete", "lease", "l"}, "deleted (server dry run)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := get(t, c, "leases", "", "l")
			out := c.must(t, append(tt.args, "--dry-run=server")...)
			if !strings.Contains(out, tt.want) {
				t.Errorf("%q, want %q", out, tt.want)
			}
			after := get(t, c, "leases", "", "l")
			if after == nil || after.GetResourceVersion() != before.GetResourceVersion() || after.GetDeletionTimestamp() != nil {
				t.Errorf("the dry run wrote: %v", after)
			}
			if get(t, c, "leases", "", "fresh") != nil {
				t.Error("the dry run created lease fresh")
			}
		})
	}
}

// ownedSecret is a Secret in namespace demo that owner (a DataObject of
// uid) owns.
func ownedSecret(name, owner, uid string) string {
	return "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: demo\n" +
		"  ownerReferences:\n  - apiVersion: cairn.dev/v1alpha1\n    kind: DataObject\n    name: " + owner + "\n    uid: " + uid + "\n" +
		"stringData:\n  value: x\n"
}

func TestKubectl_DeleteCascadeDecidesTheDependentsFate(t *testing.T) {
	c := startDaemon(t)
	c.must(t, "apply", "-f", examplePath("namespace.yaml"))
	tests := []struct {
		cascade string
		// kept: the dependent outlives its owner, without its reference.
		kept bool
		// goneFirst: the dependent is gone when kubectl returns (the
		// owner waited for it).
		goneFirst bool
	}{
		{"foreground", false, true},
		{"background", false, false},
		{"orphan", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.cascade, func(t *testing.T) {
			owner, dep := "owner-"+tt.cascade, "dep-"+tt.cascade
			c.must(t, "apply", "-f", file(t, "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata:\n  name: "+owner+"\n  namespace: demo\ndata: 1\n"))
			uid := string(get(t, c, "dataobjects", "demo", owner).GetUID())
			c.must(t, "apply", "-f", file(t, ownedSecret(dep, owner, uid)))
			out := c.must(t, "delete", "dataobject", owner, "-n", "demo", "--cascade="+tt.cascade, "--timeout=30s")
			if !strings.Contains(out, `dataobject.cairn.dev "`+owner+`" deleted`) {
				t.Errorf("delete: %q", out)
			}
			if get(t, c, "dataobjects", "demo", owner) != nil {
				t.Errorf("kubectl delete returned before %s was gone", owner)
			}
			d := get(t, c, "secrets", "demo", dep)
			switch {
			case tt.goneFirst && d != nil:
				t.Errorf("%s is still there when its foreground owner is gone", dep)
			case tt.kept:
				if d == nil || len(d.GetOwnerReferences()) != 0 || d.GetDeletionTimestamp() != nil {
					t.Fatalf("the orphan %s: %v", dep, d)
				}
				// It stays.
				time.Sleep(time.Second)
				if get(t, c, "secrets", "demo", dep) == nil {
					t.Errorf("the orphan %s was collected", dep)
				}
			default:
				// The garbage collector deletes it after: kubectl waits.
				c.must(t, "wait", "--for=delete", "secret/"+dep, "-n", "demo", "--timeout=20s")
				if get(t, c, "secrets", "demo", dep) != nil {
					t.Errorf("kubectl wait --for=delete returned with %s still there", dep)
				}
			}
		})
	}
}
