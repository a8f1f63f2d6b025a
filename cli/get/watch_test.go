package get_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/server/servertest"
)

func TestGet_SeveralKindsPrefixNamesAndNameEmptyKinds(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	r := clitest.Run(t, srv.Config(), "get", "secrets,cleaners,executions")
	if r.Error != nil || !strings.Contains(r.Out, "\nsecret/db ") || strings.Contains(r.Out, "\ndb ") {
		t.Errorf("several kinds: names want a kind/ prefix, got %v\n%s", r.Error, r.Out)
	}
	if r.Err != "No cleaners, executions found.\n" {
		t.Errorf("kinds with nothing found: stderr %q, want them named", r.Err)
	}
}

func TestGet_WatchShowsDeletionsSkipsUnchangedRowsKeepsColumns(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out clitest.Buffer
	done := make(chan clitest.Result, 1)
	go func() {
		done <- clitest.RunContext(ctx, t, srv.Config(), clitest.Cmd{Args: []string{"get", "secrets", "-w", "--output-watch-events"}}, &out)
	}()
	waitFor(t, &out, "ADDED      db ")
	sys := identity.With(context.Background(), identity.System())
	// A change no column shows prints no row.
	if _, err := srv.Registry.Patch(sys, "Secret", "default", "db", []byte(`{"metadata":{"annotations":{"x":"y"}}}`), false); err != nil {
		t.Fatal(err)
	}
	// A longer name makes its own row ragged, not every later one.
	r := clitest.RunContext(ctx, t, srv.Config(), clitest.Cmd{Args: []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: a-much-longer-secret-name}\n"}, nil)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	waitFor(t, &out, "a-much-longer-secret-name")
	if _, err := srv.Registry.Patch(sys, "Secret", "default", "db", []byte(`{"data":{"extra":"eA=="}}`), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "MODIFIED   db ")
	if _, _, err := srv.Registry.Delete(sys, "Secret", "default", "api", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "DELETED    api ")
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("get -w did not end")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	header := lines[0]
	if !strings.HasPrefix(header, "EVENT ") {
		t.Fatalf("header %q: want EVENT first", header)
	}
	dbRows := 0
	for _, l := range lines[1:] {
		if strings.Contains(l, " db ") {
			dbRows++
		}
		if strings.Contains(l, "a-much-longer") {
			continue
		}
		if strings.Index(l, " Opaque") >= 0 && strings.Index(l, "Opaque") != strings.Index(header, "TYPE") {
			t.Errorf("row %q: TYPE does not start under the header %q", l, header)
		}
	}
	if dbRows != 2 {
		t.Errorf("db printed %d times, want 2 (ADDED, and MODIFIED with 3 keys):\n%s", dbRows, out.String())
	}
}
