package kinds

import (
	"context"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/registry"
)

// Gateway defines the Gateway kind: a github or cloudevents webhook
// receiver whose secret is a key of a Secret in its namespace. Its
// endpoint (POST .../gateways/{name}/webhook) is not a registry action:
// the server hands it to the gateway package, unauthenticated by API
// tokens (server.Options.Webhooks).
func Gateway() registry.Kind {
	return registry.Define(registry.Spec[*api.Gateway]{
		Kind: api.KindGateway, Namespaced: true, ShortNames: []string{"gw"}, Fields: []string{"spec"},
		Columns: []api.Column{
			{Name: "TYPE", Path: ".spec.type"},
			{Name: "SECRET", Path: ".spec.secretRef.name"},
			{Name: "REPORT-API", Path: ".spec.report.apiURL", Wide: true},
			age,
		},
		Default: defaultGateway,
		Validate: func(_ context.Context, _ *registry.Admission, g *api.Gateway) field.ErrorList {
			return validateGateway(&g.Spec, field.NewPath("spec"))
		},
		Acts: actsOfGateway,
	})
}

func defaultGateway(g *api.Gateway) {
	if g.Spec.Report != nil && g.Spec.Report.APIURL == "" {
		g.Spec.Report.APIURL = api.DefaultGitHubAPIURL
	}
}

// validateGateway checks a Gateway's spec, naming the field at fault.
func validateGateway(s *api.GatewaySpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case api.GatewayGitHub, api.GatewayCloudEvents:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "github or cloudevents"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, []api.GatewayType{api.GatewayGitHub, api.GatewayCloudEvents}))
	}
	what := "the webhook secret GitHub signs deliveries with"
	if s.Type == api.GatewayCloudEvents {
		what = "the bearer token senders present"
	}
	errs = append(errs, validateSecretKeyRef(s.SecretRef, p.Child("secretRef"), what)...)
	if s.Report == nil {
		return errs
	}
	rp := p.Child("report")
	if s.Type != api.GatewayGitHub {
		return append(errs, field.Forbidden(rp, "only a github Gateway reports commit statuses"))
	}
	errs = append(errs, validateSecretKeyRef(s.Report.TokenSecretRef, rp.Child("tokenSecretRef"), "the GitHub token statuses are posted with")...)
	if u, err := url.Parse(s.Report.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, field.Invalid(rp.Child("apiURL"), s.Report.APIURL,
			"must be an absolute http(s) URL, e.g. https://api.github.com or https://HOST/api/v3 for GitHub Enterprise"))
	}
	return errs
}

// validateSecretKeyRef checks a reference to the key of a Secret that
// holds what.
func validateSecretKeyRef(r api.SecretKeyRef, p *field.Path, what string) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the name of the Secret holding "+what))
	}
	for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
		if r.Name != "" {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	if r.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), "the key of the Secret's data holding "+what))
	}
	for _, msg := range validation.IsConfigMapKey(r.Key) {
		if r.Key != "" {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, msg))
		}
	}
	return errs
}

// actsOfGateway: a Gateway makes cairn read its Secrets and create Events
// in its namespace for whoever presents its secret.
func actsOfGateway(g *api.Gateway) []authz.Attributes {
	acts := []authz.Attributes{{Verb: authz.VerbCreate, Kind: api.KindEvent}}
	if g.Spec.SecretRef.Name != "" {
		acts = append(acts, authz.Attributes{Verb: authz.VerbGet, Kind: api.KindSecret, Name: g.Spec.SecretRef.Name})
	}
	if g.Spec.Report != nil && g.Spec.Report.TokenSecretRef.Name != "" {
		acts = append(acts, authz.Attributes{Verb: authz.VerbGet, Kind: api.KindSecret, Name: g.Spec.Report.TokenSecretRef.Name})
	}
	return acts
}
