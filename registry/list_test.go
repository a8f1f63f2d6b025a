package registry_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// readAll reads the rest of lr.
func readAll(t *testing.T, lr *registry.ListReader) []*api.Object {
	t.Helper()
	var out []*api.Object
	for {
		o, err := lr.Next(sysCtx())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
}

func TestListReader_ReadsOneSnapshotPageByPage(t *testing.T) {
	r, _ := newRegistry(t)
	// 300 KiB values: a store page (about 512 KiB) holds one or two, so
	// the list takes several store reads.
	value := strings.Repeat("x", 300<<10)
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("a%02d", i))
		mustCreate(t, r, testkit.Secret("default", names[i], map[string]string{"v": value}))
	}
	tests := []struct {
		name  string
		limit int64
		want  []string // what the first reader returns
	}{
		{"whole list", 0, names},
		{"limited", 5, names[:5]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Read two objects, then change the collection: the rest of
			// the list is still the snapshot at the list's version.
			lr, err := r.OpenList(sysCtx(), "Secret", "default", api.ListOptions{Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			rv := lr.ResourceVersion()
			var objs []*api.Object
			for range 2 {
				o, err := lr.Next(sysCtx())
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, o)
			}
			if _, _, err := r.Delete(sysCtx(), "Secret", "default", "a03", api.DeleteOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, r, testkit.Secret("default", "a03b", nil))
			defer func() {
				if _, _, err := r.Delete(sysCtx(), "Secret", "default", "a03b", api.DeleteOptions{Force: true}); err != nil {
					t.Fatal(err)
				}
				mustCreate(t, r, testkit.Secret("default", "a03", map[string]string{"v": value}))
			}()
			objs = append(objs, readAll(t, lr)...)
			var gotNames []string
			for _, o := range objs {
				gotNames = append(gotNames, o.Name)
				if rvOf(t, o.ResourceVersion) > rvOf(t, rv) {
					t.Errorf("%s at resourceVersion %s, after the list's %s", o.Name, o.ResourceVersion, rv)
				}
			}
			if !slices.Equal(gotNames, tc.want) {
				t.Fatalf("the list read %v, want the snapshot %v", gotNames, tc.want)
			}
			if lr.ResourceVersion() != rv {
				t.Fatalf("resourceVersion changed from %s to %s while reading", rv, lr.ResourceVersion())
			}
			if (lr.Continue() != "") != (tc.limit > 0) {
				t.Fatalf("continue %q with limit %d", lr.Continue(), tc.limit)
			}
			if tc.limit == 0 {
				return
			}
			// The next page continues the same snapshot.
			rest, err := r.List(sysCtx(), "Secret", "default", api.ListOptions{Limit: tc.limit, Continue: lr.Continue()})
			if err != nil {
				t.Fatal(err)
			}
			var restNames []string
			for _, o := range rest.Items {
				restNames = append(restNames, o.Name)
			}
			if !slices.Equal(restNames, names[tc.limit:]) || rest.ResourceVersion != rv || rest.Continue != "" {
				t.Fatalf("next page %v at %s (continue %q), want %v at %s", restNames, rest.ResourceVersion, rest.Continue, names[tc.limit:], rv)
			}
		})
	}
}

func TestList_ACollectedListReadsTheStoreInGrowingPages(t *testing.T) {
	r, _ := newRegistry(t)
	// Small objects: a store page holds listChunk (500) of them.
	const n = 2500
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("s%05d", i))
		mustCreate(t, r, testkit.Secret("default", names[i], map[string]string{"v": "x"}))
	}
	namesOf := func(objs []*api.Object) []string {
		out := make([]string, len(objs))
		for i, o := range objs {
			out[i] = o.Name
		}
		return out
	}

	// Streamed (as the HTTP server reads a list): pages of at most 500.
	before := rangeCalls(t)
	lr, err := r.OpenList(sysCtx(), "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := namesOf(readAll(t, lr)); !slices.Equal(got, names) {
		t.Fatalf("the streamed list has %d objects, want the %d in order", len(got), n)
	}
	streamed := rangeCalls(t) - before
	if streamed < n/500 {
		t.Fatalf("a streamed list of %d objects took %v store reads, want pages of at most 500", n, streamed)
	}

	// Collected whole: the pages double, so fewer reads.
	before = rangeCalls(t)
	list, err := r.List(sysCtx(), "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := namesOf(list.Items); !slices.Equal(got, names) {
		t.Fatalf("the collected list has %d objects, want the %d in order", len(got), n)
	}
	collected := rangeCalls(t) - before
	t.Logf("%d objects: %v store reads streamed, %v collected", n, streamed, collected)
	if collected > 4 || collected >= streamed {
		t.Fatalf("a collected list of %d objects took %v store reads (streamed: %v), want at most 4 (4, 1000, 2000 keys)", n, collected, streamed)
	}

	// Collected in limited pages (as informers read), each store page
	// decoded ahead on every core: the pages join up exactly, in order.
	var got []string
	opts := api.ListOptions{Limit: 1000}
	for {
		page, err := r.List(sysCtx(), "Secret", "default", opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 1000 {
			t.Fatalf("a page of %d objects, over its limit of 1000", len(page.Items))
		}
		got = append(got, namesOf(page.Items)...)
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if !slices.Equal(got, names) {
		t.Fatalf("the limited pages hold %d objects, want the %d in order", len(got), n)
	}
}
