package api

// KindGateway turns deliveries from outside (GitHub webhooks, CloudEvents)
// into Events.
const KindGateway = "Gateway"

// Gateway receives webhook deliveries at
// POST /apis/cairn.dev/v1alpha1/namespaces/{ns}/gateways/{name}/webhook and
// creates Events from them by fan-out in its namespace. The endpoint is
// authenticated by the delivery's signature (github) or the bearer token
// the Gateway's Secret holds (cloudevents), never by an API token.
type Gateway struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       GatewaySpec `json:"spec"`
}

// GatewayType is the protocol a Gateway speaks.
type GatewayType string

// The types of a Gateway.
const (
	// GatewayGitHub receives GitHub webhook deliveries, signed with
	// X-Hub-Signature-256 (HMAC-SHA256 with the Gateway's secret).
	GatewayGitHub GatewayType = "github"
	// GatewayCloudEvents receives CloudEvents 1.0 over HTTP (binary and
	// structured modes) from senders presenting the Gateway's bearer token.
	GatewayCloudEvents GatewayType = "cloudevents"
)

// GatewaySpec says what a Gateway receives and how it checks its senders.
type GatewaySpec struct {
	// Type is github or cloudevents.
	Type GatewayType `json:"type"`
	// SecretRef names the key of a Secret in the Gateway's namespace that
	// holds the webhook secret (github) or the bearer token senders
	// present (cloudevents).
	SecretRef SecretKeyRef `json:"secretRef"`
	// Report, for a github Gateway, is how the status of its Events'
	// workers is posted back to GitHub as commit statuses; unset: nothing
	// is reported.
	Report *GatewayReport `json:"report,omitempty"`
}

// GatewayReport is where and with which token a github Gateway reports.
type GatewayReport struct {
	// TokenSecretRef names the key of the Secret holding the GitHub token
	// commit statuses are posted with.
	TokenSecretRef SecretKeyRef `json:"tokenSecretRef"`
	// APIURL is the GitHub API's base URL; default https://api.github.com
	// (GitHub Enterprise: https://HOST/api/v3).
	APIURL string `json:"apiURL,omitempty"`
}

// DefaultGitHubAPIURL is a Gateway report's apiURL when unset.
const DefaultGitHubAPIURL = "https://api.github.com"

// GatewayWebhookAction is the name of a Gateway's webhook endpoint, the
// last segment of its path.
const GatewayWebhookAction = "webhook"

// EventLabelFork is the label of an Event (spec.labels) that says whether
// it comes from a fork: "true" for a pull request whose head is in another
// repository than its base. Such an Event copies none of its project's
// secrets unless the project sets trustForks.
const EventLabelFork = "fork"
