package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// BenchmarkGitHubWebhookIngest: signed GitHub pull_request deliveries per
// second over HTTPS by 32 concurrent senders to one github Gateway, each
// delivery (its own X-GitHub-Delivery) verified and fanned out to the two
// subscribed projects — two Events, each with its Secret copy, in one
// transaction. No controllers run. The payload is GitHub's documented
// pull_request "opened" shape (gateway/testdata).
func BenchmarkGitHubWebhookIngest(b *testing.B) {
	d, c, _ := startEvents(b, nil, "true")
	ctx := context.Background()
	const secret = "bench-webhook-secret"
	if _, err := c.Create(ctx, testkit.Secret("default", "github-webhook", map[string]string{"secret": secret})); err != nil {
		b.Fatal(err)
	}
	if _, err := client.For[*api.Gateway](c).Create(ctx, &api.Gateway{ObjectMeta: api.ObjectMeta{Name: "github", Namespace: "default"},
		Spec: api.GatewaySpec{Type: api.GatewayGitHub, SecretRef: api.SecretKeyRef{Name: "github-webhook", Key: "secret"}}}); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"preview", "checks"} {
		if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
			Spec: api.ProjectSpec{Secrets: []string{"bench-secret"}, WorkerTemplate: api.WorkerSpec{Command: []string{"true"}},
				EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"pull_request:opened"},
					Qualifiers: map[string]string{"repo": "Codertocat/Hello-World"}}}}}); err != nil {
			b.Fatal(err)
		}
	}
	body, err := os.ReadFile("../gateway/testdata/pull_request_opened.json")
	if err != nil {
		b.Fatal(err)
	}
	cfg := d.ClientConfig()
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, TLSClientConfig: tlsConfig}}
	url := cfg.Server + api.BasePath + "/namespaces/default/gateways/github/webhook"
	const clients, perClient = 32, 100
	var rate float64
	for iter := 0; iter < b.N; iter++ {
		rate = concurrently(b, clients, perClient, func(w, i int) error {
			return deliver(hc, url, fmt.Sprintf("d-%d-%d-%d", iter, w, i), secret, body)
		})
	}
	evs, _, err := client.For[*api.Event](c).List(ctx, "default", api.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if want := 2 * clients * perClient * b.N; len(evs) != want {
		b.Fatalf("%d events, want %d (2 per delivery)", len(evs), want)
	}
	b.ReportMetric(rate, "deliveries/s")
	b.ReportMetric(2*rate, "events/s")
}

// deliver posts one signed pull_request delivery and fails unless it
// created two Events.
func deliver(hc *http.Client, url, id, secret string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// Signed as GitHub signs: HMAC-SHA256 of the body, computed per request.
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"outcome":"created"`)) {
		return fmt.Errorf("delivery %s: %d %s", id, resp.StatusCode, b)
	}
	return nil
}
