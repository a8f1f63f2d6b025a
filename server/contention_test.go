package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

const mergePatch = "application/merge-patch+json"

// concurrently runs n writers at once (writer w uses clients[w%len]) and
// returns each one's reply.
func concurrently(n int, clients []*client, write func(c *client, w int) reply) []reply {
	out := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[w] = write(clients[w%len(clients)], w)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// wantAllOK fails the test unless every reply is 200.
func wantAllOK(t *testing.T, replies []reply) {
	t.Helper()
	failed := 0
	for w, r := range replies {
		if r.code != http.StatusOK {
			failed++
			t.Errorf("writer %d: %d %s", w, r.code, r.body)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d unconditional writes failed", failed, len(replies))
	}
}

// TestUnconditionalPatch_SixtyFourConcurrentPatchesAllApply sends 64
// PATCHes without a resourceVersion to one Secret at once, each adding its
// own label, through one server and then through two servers sharing one
// etcd (whose writers do not wait for each other and meet in etcd's
// compare-and-swap): every one answers 200 and the object ends with all
// 64 labels. A PATCH that names a stale resourceVersion still conflicts.
func TestUnconditionalPatch_SixtyFourConcurrentPatchesAllApply(t *testing.T) {
	s1 := servertest.Start(t)
	s2 := servertest.Start(t, servertest.SharedWith(s1))
	c1, c2 := newClient(t, s1), newClient(t, s2)
	for _, tc := range []struct {
		name    string
		clients []*client
	}{
		{"one server", []*client{c1}},
		{"two servers on one etcd", []*client{c1, c2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("hot-%d", len(tc.clients))
			p := nsPath("default", "secrets", name)
			first := c1.do("POST", nsPath("default", "secrets"), testkit.Secret("default", name, nil)).expect(t, http.StatusCreated).object(t)
			const writers = 64
			wantAllOK(t, concurrently(writers, tc.clients, func(c *client, w int) reply {
				return c.do("PATCH", p, fmt.Sprintf(`{"metadata":{"labels":{"w%d":"x"}}}`, w), "Content-Type", mergePatch)
			}))
			got := c1.do("GET", p, nil).expect(t, http.StatusOK).object(t)
			for w := range writers {
				if got.Labels[fmt.Sprintf("w%d", w)] != "x" {
					t.Fatalf("label w%d lost; the object has %d labels: %v", w, len(got.Labels), got.Labels)
				}
			}
			stale := `{"metadata":{"resourceVersion":"` + first.ResourceVersion + `","labels":{"late":"x"}}}`
			c2.do("PATCH", p, stale, "Content-Type", mergePatch).expect(t, http.StatusConflict)
		})
	}
}

// TestUnconditionalStatus_SixtyFourConcurrentUpdatesAllApply sends 64
// status PUTs without a resourceVersion to one Widget at once (all 200,
// the last one's status stays), then 64 status PATCHes each adding its own
// entry to status (all 200, every entry kept).
func TestUnconditionalStatus_SixtyFourConcurrentUpdatesAllApply(t *testing.T) {
	s := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...))
	c := newClient(t, s)
	p := nsPath("default", "widgets", "w")
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)
	const writers = 64

	puts := concurrently(writers, []*client{c}, func(c *client, w int) reply {
		body := testkit.Widget("default", "w", testkit.Status(fmt.Sprintf(`{"phase":"p%d"}`, w)))
		return c.do("PUT", p+"/status", body)
	})
	wantAllOK(t, puts)
	last, lastRV := "", int64(0)
	for _, r := range puts {
		o := r.object(t)
		rv, err := strconv.ParseInt(o.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if rv > lastRV {
			last, lastRV = string(o.Field(api.FieldStatus)), rv
		}
	}
	if got := c.do("GET", p, nil).object(t); string(got.Field(api.FieldStatus)) != last {
		t.Fatalf("status is %s, want the last write's %s", got.Field(api.FieldStatus), last)
	}

	c.do("PUT", p+"/status", testkit.Widget("default", "w", testkit.Status(`{"conditions":{}}`))).expect(t, http.StatusOK)
	wantAllOK(t, concurrently(writers, []*client{c}, func(c *client, w int) reply {
		return c.do("PATCH", p+"/status", fmt.Sprintf(`{"status":{"conditions":{"w%d":"ok"}}}`, w), "Content-Type", mergePatch)
	}))
	var status struct {
		Conditions map[string]string `json:"conditions"`
	}
	got := c.do("GET", p, nil).object(t)
	if err := json.Unmarshal(got.Field(api.FieldStatus), &status); err != nil || len(status.Conditions) != writers {
		t.Fatalf("status after %d patches: %s (%v)", writers, got.Field(api.FieldStatus), err)
	}
}
