package event

import (
	"slices"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// TestNamespaceSubscriptions_CurrentOnlyWhenKeysAndRevisionsAreTheSame:
// kept subscriptions answer only while the stored projects are exactly
// those they were built from; any project added, removed, renamed or
// written since makes them stale.
func TestNamespaceSubscriptions_CurrentOnlyWhenKeysAndRevisionsAreTheSame(t *testing.T) {
	const prefix = "/cairn/objects/projects/default/"
	n := &namespaceSubscriptions{versions: []projectVersion{{"a", 5}, {"b", 7}}}
	kv := func(name string, rev int64) *store.KV { return &store.KV{Key: prefix + name, ModRevision: rev} }
	for _, tc := range []struct {
		name string
		kvs  []*store.KV
		want bool
	}{
		{"same", []*store.KV{kv("a", 5), kv("b", 7)}, true},
		{"one written since", []*store.KV{kv("a", 5), kv("b", 9)}, false},
		{"one added", []*store.KV{kv("a", 5), kv("b", 7), kv("c", 8)}, false},
		{"one removed", []*store.KV{kv("a", 5)}, false},
		{"one replaced at the same revision", []*store.KV{kv("a", 5), kv("c", 7)}, false},
		{"none", nil, false},
	} {
		if got := n.current(tc.kvs, len(prefix)); got != tc.want {
			t.Errorf("%s: current = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNamespaceSubscriptions_MatchTakesEverySubscriptionOfTheSource: an
// event matches the projects with a subscription of its source that
// matches it (type, qualifiers, labels), in name order, whatever other
// sources the projects subscribe to.
func TestNamespaceSubscriptions_MatchTakesEverySubscriptionOfTheSource(t *testing.T) {
	n := &namespaceSubscriptions{bySource: map[string][]subscriber{}}
	n.add("z", []api.EventSubscription{{Source: "github", Types: []string{"push"}}})
	n.add("b", []api.EventSubscription{{Source: "slack", Types: []string{"*"}},
		{Source: "github", Types: []string{"pull_request"}, Qualifiers: map[string]string{"repo": "o/r"}}})
	n.add("a", []api.EventSubscription{{Source: "github", Types: []string{"*"}, Labels: map[string]string{"pr": "1"}},
		{Source: "github", Types: []string{"push"}}})
	n.add("quiet", nil)
	ev := func(src, typ string, q, l map[string]string) *api.Event {
		return &api.Event{Spec: api.EventSpec{Source: src, Type: typ, Qualifiers: q, Labels: l}}
	}
	for _, tc := range []struct {
		name string
		ev   *api.Event
		want []string
	}{
		{"push", ev("github", "push", nil, nil), []string{"a", "z"}},
		{"pull request of the repo", ev("github", "pull_request", map[string]string{"repo": "o/r"}, nil), []string{"b"}},
		{"pull request with the label", ev("github", "pull_request", nil, map[string]string{"pr": "1"}), []string{"a"}},
		{"another source", ev("slack", "message", nil, nil), []string{"b"}},
		{"no subscriber", ev("gitlab", "push", nil, nil), nil},
	} {
		if got := n.match(tc.ev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: match = %v, want %v", tc.name, got, tc.want)
		}
	}
}
