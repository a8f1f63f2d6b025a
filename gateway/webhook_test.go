package gateway_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/gateway"
)

const headSHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"

func TestWebhook_SignedPullRequestCreatesOneEventPerSubscribedProject(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: prSubscription("pull_request:opened")})
	e.project("checks", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	e.project("other-repo", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"*"},
		Qualifiers: map[string]string{"repo": "someone/else"}}}})
	body := payload(t, "pull_request_opened.json")

	res := e.deliver("github", "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body)

	if res.Outcome != gateway.OutcomeCreated || len(res.Events) != 2 {
		t.Fatalf("result %+v, want 2 events created", res)
	}
	evs := e.events()
	if len(evs) != 2 {
		t.Fatalf("%d events stored, want 2", len(evs))
	}
	want := map[string]string{"pr": "2", "branch": "changes", "sha": headSHA, "fork": "false"}
	for _, ev := range evs {
		if !slices.Contains([]string{"preview", "checks"}, ev.Spec.Project) || ev.Spec.Source != "github" ||
			ev.Spec.Type != "pull_request:opened" || ev.Spec.Qualifiers["repo"] != "Codertocat/Hello-World" ||
			!maps.Equal(ev.Spec.Labels, want) || ev.Spec.Payload != string(body) || ev.Annotations[gateway.AnnotationGateway] != "github" {
			t.Errorf("event %s: spec %+v annotations %v", ev.Name, ev.Spec, ev.Annotations)
		}
		if ev.Status.Worker.Phase != api.PhasePending {
			t.Errorf("event %s is %s, want PENDING", ev.Name, ev.Status.Worker.Phase)
		}
	}
}

func TestWebhook_BadSignatureIs401AndCreatesNothing(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	body := payload(t, "pull_request_opened.json")
	wrongAlg := github("pull_request", "d", "", body)
	wrongAlg.Set("X-Hub-Signature", "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6")
	wrongAlg.Set(gateway.SignatureHeader, strings.Replace(gateway.SignatureOf([]byte(webhookSecret), body), "sha256", "sha1", 1))
	apiToken := github("pull_request", "d", "", body)
	apiToken.Set("Authorization", "Bearer "+e.s.Token) // an admin's API token is no signature
	for name, h := range map[string]http.Header{
		"missing":         github("pull_request", "d", "", body),
		"wrong secret":    github("pull_request", "d", "another secret", body),
		"wrong algorithm": wrongAlg,
		"api token":       apiToken,
	} {
		code, b := e.post("github", h, body)
		if code != http.StatusUnauthorized || reasonOf(b) != "Unauthorized" {
			t.Errorf("%s: %d %s, want 401", name, code, b)
		}
		if strings.Contains(string(b), webhookSecret) {
			t.Errorf("%s: the answer shows the secret", name)
		}
	}
	if n := len(e.events()); n != 0 {
		t.Errorf("%d events created by unsigned deliveries", n)
	}
	if strings.Contains(e.logs.String(), webhookSecret) {
		t.Error("the log shows the secret")
	}
}

func TestWebhook_RepeatedDeliveryCreatesNoSecondEvent(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	e.project("checks", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	body := payload(t, "pull_request_synchronize.json")
	first := e.deliver("github", "pull_request", "delivery-1", body)
	if len(first.Events) != 2 {
		t.Fatalf("first delivery: %+v", first)
	}
	again := e.deliver("github", "pull_request", "delivery-1", body)
	if again.Outcome != gateway.OutcomeRepeated || len(again.Events) != 0 {
		t.Errorf("redelivery: %+v, want repeated", again)
	}
	// Another process (a restart: a new server, handler and event service
	// over the same store) still knows the delivery.
	restarted := start(t, servertestSharedWith(e))
	if res := restarted.deliver("github", "pull_request", "delivery-1", body); res.Outcome != gateway.OutcomeRepeated {
		t.Errorf("redelivery after a restart: %+v, want repeated", res)
	}
	if n := len(e.events()); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
	if got := e.counter("cairn_gateway_repeated_total", map[string]string{"type": "github"}); got != 1 {
		t.Errorf("repeated counter %v, want 1", got)
	}
	// A new delivery of the same payload is a new event.
	if res := e.deliver("github", "pull_request", "delivery-2", body); len(res.Events) != 2 {
		t.Errorf("a new delivery: %+v", res)
	}
}

func TestWebhook_PingIsAnsweredAndCreatesNothing(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	res := e.deliver("github", "ping", "ping-1", payload(t, "ping.json"))
	if res.Outcome != gateway.OutcomePing || len(e.events()) != 0 {
		t.Errorf("ping: %+v, %d events", res, len(e.events()))
	}
}

func TestWebhook_UnknownEventTypeIsIgnoredAndCounted(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"*"}}}})
	for _, d := range []struct{ event, file string }{{"star", "star.json"}, {"pull_request", "pull_request_edited.json"}} {
		if res := e.deliver("github", d.event, d.file, payload(t, d.file)); res.Outcome != gateway.OutcomeIgnored {
			t.Errorf("%s: %+v, want ignored", d.file, res)
		}
	}
	if n := len(e.events()); n != 0 {
		t.Errorf("%d events created by ignored deliveries", n)
	}
	for _, ev := range []string{"star", "pull_request"} {
		if got := e.counter("cairn_gateway_ignored_total", map[string]string{"type": "github", "event": ev}); got != 1 {
			t.Errorf("ignored %s counted %v, want 1", ev, got)
		}
	}
}

func TestWebhook_EachMappedEventTypeReachesItsSubscriber(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	types := []string{"push", "pull_request:opened", "pull_request:synchronize", "pull_request:reopened", "pull_request:closed",
		"pull_request:labeled", "pull_request:unlabeled", "issue_comment:created", "check_suite:completed"}
	e.project("all", api.ProjectSpec{EventSubscriptions: prSubscription(types...)})
	// A project that wants only pull requests labeled preview.
	e.project("previews", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"pull_request:labeled"},
		Qualifiers: map[string]string{"repo": "Codertocat/Hello-World"}, Labels: map[string]string{"label": "preview"}}}})
	for _, d := range []struct{ event, file string }{{"push", "push.json"}, {"pull_request", "pull_request_opened.json"},
		{"pull_request", "pull_request_synchronize.json"}, {"pull_request", "pull_request_reopened.json"},
		{"pull_request", "pull_request_closed.json"}, {"pull_request", "pull_request_labeled.json"},
		{"pull_request", "pull_request_unlabeled.json"}, {"issue_comment", "issue_comment.json"}, {"check_suite", "check_suite.json"}} {
		e.deliver("github", d.event, d.file, payload(t, d.file))
	}
	got := map[string][]string{}
	for _, ev := range e.events() {
		got[ev.Spec.Project] = append(got[ev.Spec.Project], ev.Spec.Type)
	}
	slices.Sort(got["all"])
	slices.Sort(types)
	if !slices.Equal(got["all"], types) || !slices.Equal(got["previews"], []string{"pull_request:labeled"}) {
		t.Errorf("events by project %v, want all %v and previews [pull_request:labeled]", got, types)
	}
}

func TestWebhook_BadInput(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("preview", api.ProjectSpec{EventSubscriptions: prSubscription("*")})
	big := []byte(`{"padding":"` + strings.Repeat("x", gateway.MaxBodyBytes) + `"}`)
	form := []byte("payload=%7B%22zen%22%3A%22hi%22%7D")
	formHeader := github("push", "f", webhookSecret, form)
	formHeader.Set("Content-Type", "application/x-www-form-urlencoded")
	notJSON := []byte("<xml/>")
	for _, tc := range []struct {
		name   string
		gw     string
		header http.Header
		body   []byte
		code   int
	}{
		{"over the size limit", "github", github("push", "big", webhookSecret, big), big, http.StatusRequestEntityTooLarge},
		{"form-encoded", "github", formHeader, form, http.StatusBadRequest},
		{"not JSON", "github", github("push", "x", webhookSecret, notJSON), notJSON, http.StatusBadRequest},
		{"no event header", "github", github("", "x", webhookSecret, []byte("{}")), []byte("{}"), http.StatusBadRequest},
		{"no such gateway", "nope", github("push", "x", webhookSecret, []byte("{}")), []byte("{}"), http.StatusNotFound},
	} {
		code, b := e.post(tc.gw, tc.header, tc.body)
		if code != tc.code {
			t.Errorf("%s: %d %.200s, want %d", tc.name, code, b, tc.code)
		}
	}
	if n := len(e.events()); n != 0 {
		t.Errorf("%d events created by bad deliveries", n)
	}
}

func TestWebhook_NoSubscribedProjectIs200WithNoEventAndADebugLog(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.project("elsewhere", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"*"},
		Qualifiers: map[string]string{"repo": "someone/else"}}}})
	res := e.deliver("github", "push", "p-1", payload(t, "push.json"))
	if res.Outcome != gateway.OutcomeUnsubscribed || len(e.events()) != 0 {
		t.Errorf("%+v, %d events; want unsubscribed, none", res, len(e.events()))
	}
	if logs := e.logs.String(); !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "no project subscribes") {
		t.Errorf("no debug log of the unsubscribed delivery: %s", logs)
	}
}

func TestWebhook_AForkGetsNoSecretsUnlessTheProjectTrustsForks(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	e.secret("deploy-key", map[string]string{"key": "hunter2"})
	e.project("careful", api.ProjectSpec{EventSubscriptions: prSubscription("*"), Secrets: []string{"deploy-key"}})
	e.project("trusting", api.ProjectSpec{EventSubscriptions: prSubscription("*"), Secrets: []string{"deploy-key"}, TrustForks: true})

	secretsOf := func(delivery, file string) map[string]map[string]string {
		t.Helper()
		res := e.deliver("github", "pull_request", delivery, payload(t, file))
		out := map[string]map[string]string{}
		for _, name := range res.Events {
			ev := e.eventNamed(name)
			sec, err := e.svc.Secrets(context.Background(), "default", name)
			if err != nil {
				t.Fatal(err)
			}
			data := map[string]string{}
			for k, v := range sec.Data {
				data[k] = string(v)
			}
			out[ev.Spec.Project+" fork="+ev.Spec.Labels["fork"]] = data
		}
		return out
	}
	fork := secretsOf("fork-1", "pull_request_fork.json")
	if len(fork["careful fork=true"]) != 0 || fork["trusting fork=true"]["key"] != "hunter2" || len(fork) != 2 {
		t.Errorf("a fork's events have secrets %v: want none for careful, the key for trusting", fork)
	}
	same := secretsOf("same-1", "pull_request_opened.json")
	if same["careful fork=false"]["key"] != "hunter2" || same["trusting fork=false"]["key"] != "hunter2" {
		t.Errorf("a pull request from the repository itself has secrets %v: want the key for both", same)
	}
}

func TestWebhook_OnlyTheWebhookPathGoesWithoutAnAPIToken(t *testing.T) {
	e := start(t)
	e.gateway("github", api.GatewayGitHub, webhookSecret)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/namespaces/default/gateways/github/webhook", http.StatusMethodNotAllowed},
		{http.MethodPost, "/namespaces/default/gateways/github/webhook/more", http.StatusUnauthorized},
		{http.MethodPost, "/namespaces/default/projects/github/webhook", http.StatusUnauthorized},
		{http.MethodGet, "/namespaces/default/gateways/github", http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(tc.method, e.s.URL+api.BasePath+tc.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := e.s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s without a token: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
	}
}
