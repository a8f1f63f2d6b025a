package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

// ownerTree creates, in namespace demo: root; a and b owned by root; c
// owned by a; p owned by root, protected; q owned by p; s owned by root
// and by keeper, which stays.
func ownerTree(t *testing.T, c client.Interface) {
	t.Helper()
	ctx := context.Background()
	mk := func(name string, opts ...testkit.Opt) *api.Object {
		o, err := c.Create(ctx, testkit.Object(api.KindDataObject, "demo", name, opts...))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	root, keeper := mk("root"), mk("keeper")
	a := mk("a", testkit.OwnedBy(root))
	mk("b", testkit.OwnedBy(root))
	mk("c", testkit.OwnedBy(a))
	p := mk("p", testkit.OwnedBy(root), testkit.Annotations(api.AnnotationDeletionProtection, "true"))
	mk("q", testkit.OwnedBy(p))
	mk("s", testkit.OwnedBy(root, keeper))
}

// getDependents asks base for the dependents at path with token and
// returns the status code and the answer.
func getDependents(t *testing.T, hc *http.Client, base, path, token string) (int, api.Dependents) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d api.Dependents
	_ = json.NewDecoder(resp.Body).Decode(&d)
	return resp.StatusCode, d
}

func treeShape(n api.DependentNode) string {
	s := n.Name
	if n.Protected {
		s += "!"
	}
	var parts []string
	for _, c := range n.Dependents {
		parts = append(parts, treeShape(c))
	}
	if len(parts) > 0 {
		s += "(" + strings.Join(parts, ",") + ")"
	}
	return s
}

// TestDependents_ServedByTheLeaderAndForwardedFromAFollower: what a
// deletion would take, asked of a server that does not lead the
// controllers, is the leader's graph's answer: the tree of owners, the
// counts, the protected object that would block it, the dependent that
// keeps another owner; nothing is deleted. A caller that may not get the
// object gets 403.
func TestDependents_ServedByTheLeaderAndForwardedFromAFollower(t *testing.T) {
	lead, follow, c := leaderAndFollower(t, daemon.Options{})
	ownerTree(t, c)
	path := api.BasePath + "/namespaces/demo/dataobjects/root/dependents"
	for _, srv := range []struct {
		name    string
		url     string
		hc      *http.Client
		token   string
		forward bool
	}{
		{"the leader", lead.URL(), testkit.HTTPClient(t, lead.ClientConfig()), lead.Token(), false},
		{"a follower", follow.URL(), testkit.HTTPClient(t, follow.ClientConfig()), follow.Token(), true},
	} {
		var d api.Dependents
		testkit.EventuallyNil(t, 15*time.Second, "the graph to hold the tree, through "+srv.name, func() error {
			code, got := getDependents(t, srv.hc, srv.url, path, srv.token)
			if code != http.StatusOK || treeShape(got.Root) != "root(a(c),b,p!)" {
				return fmt.Errorf("%d %s", code, treeShape(got.Root))
			}
			d = got
			return nil
		})
		if d.Kind != api.KindDependents || d.Total != 4 || fmt.Sprint(d.Counts) != "map[DataObject:4]" {
			t.Errorf("%s: counts %v total %d kind %q, want 4 DataObjects", srv.name, d.Counts, d.Total, d.Kind)
		}
		if len(d.Blockers) != 1 || d.Blockers[0].Name != "p" {
			t.Errorf("%s: blockers %v, want p", srv.name, d.Blockers)
		}
		if len(d.Detached) != 1 || d.Detached[0].Name != "s" {
			t.Errorf("%s: detached %v, want s", srv.name, d.Detached)
		}
	}
	if _, err := c.Get(context.Background(), api.KindDataObject, "demo", "c"); err != nil {
		t.Fatalf("asking deleted something: %v", err)
	}

	// Authorized like a get of the object: a worker of another event may
	// not read it, through the follower or at the leader.
	worker := identity.User{Name: "event:demo/e1", Scope: "demo/e1"}
	token, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.New(follow.Store()).Register(context.Background(), token, worker); err != nil {
		t.Fatal(err)
	}
	if code, _ := getDependents(t, testkit.HTTPClient(t, follow.ClientConfig()), follow.URL(), path, token); code != http.StatusForbidden {
		t.Errorf("a worker token at the follower: %d, want 403", code)
	}
	// At the leader, as the follower forwards: the asserted caller is
	// authorized as itself.
	peer := testkit.PeerClient(t, lead.ClientConfig(), testkit.PeerCertificate(t, follow.ClientConfig()))
	if code := testkit.AsPeer(t, peer, lead.URL()+path, worker); code != http.StatusForbidden {
		t.Errorf("a peer asserting a worker at the leader: %d, want 403", code)
	}
	if code := testkit.AsPeer(t, peer, lead.URL()+path, auth.AdminUser()); code != http.StatusOK {
		t.Errorf("a peer asserting an admin at the leader: %d, want 200", code)
	}
	// An object that does not exist: 404.
	if code, _ := getDependents(t, testkit.HTTPClient(t, follow.ClientConfig()), follow.URL(),
		api.BasePath+"/namespaces/demo/dataobjects/nope/dependents", follow.Token()); code != http.StatusNotFound {
		t.Errorf("the dependents of no object: %d, want 404", code)
	}
}
