// Package commitstatus reports the workers of Events that came through a
// github Gateway back to GitHub, as commit statuses on the commit the
// Event names (DESIGN.md "Gateways", Reporting): pending when the worker
// runs, success, failure or error when it ends, with the context
// cairn/<project> and the console's page of the Event as target URL.
//
// Decide is the pure decision (which status an Event's phase makes, if
// any); the controller around it only reads the Event, its Gateway and
// the token Secret from the shared informers and posts with go-github. A
// report that fails is retried with the work queue's backoff; reporting
// never writes the Event.
package commitstatus

import (
	"net/url"
	"strings"

	"cairn.dev/cairn/api"
)

// The commit status states GitHub takes.
const (
	StatePending = "pending"
	StateSuccess = "success"
	StateFailure = "failure"
	StateError   = "error"
)

// annotationGateway names the Gateway an Event came through (the gateway
// package sets it; the value is repeated here, as the wire format, to
// keep this API client apart from the store side).
const annotationGateway = "cairn.dev/gateway"

// Report is one commit status to post.
type Report struct {
	// APIURL is the GitHub API's base URL.
	APIURL string
	// TokenRef names the Secret key holding the token.
	TokenRef api.SecretKeyRef
	// Owner, Repo and SHA name the commit.
	Owner, Repo, SHA string
	// State, Context, Description and TargetURL are the status.
	State, Context, Description, TargetURL string
}

// State is the commit status state of a worker phase: pending while it
// runs, success, failure (FAILED, TIMED_OUT) or error (CANCELED, ABORTED,
// SCHEDULING_FAILED) once it ended; "" for the phases reported nothing for
// (PENDING, STARTING, UNKNOWN, unknown values).
func State(p api.EventPhase) string {
	switch p {
	case api.PhaseRunning:
		return StatePending
	case api.PhaseSucceeded:
		return StateSuccess
	case api.PhaseFailed, api.PhaseTimedOut:
		return StateFailure
	case api.PhaseCanceled, api.PhaseAborted, api.PhaseSchedulingFailed:
		return StateError
	}
	return ""
}

// Decide says which commit status ev's worker phase makes, given the
// Gateway gw it came through (nil when it did not, or it is gone) and the
// console's base URL: none (false) unless gw is a github Gateway with a
// report, ev names a repository (qualifier repo "owner/name") and a
// commit (label sha), and its phase is one State reports. It is a pure
// function.
func Decide(ev *api.Event, gw *api.Gateway, consoleURL string) (Report, bool) {
	if gw == nil || gw.Spec.Type != api.GatewayGitHub || gw.Spec.Report == nil ||
		ev.Annotations[annotationGateway] != gw.Name || ev.Namespace != gw.Namespace {
		return Report{}, false
	}
	owner, repo, ok := strings.Cut(ev.Spec.Qualifiers["repo"], "/")
	sha := ev.Spec.Labels["sha"]
	state := State(ev.Status.Worker.Phase)
	if !ok || owner == "" || repo == "" || sha == "" || state == "" {
		return Report{}, false
	}
	apiURL := gw.Spec.Report.APIURL
	if apiURL == "" {
		apiURL = api.DefaultGitHubAPIURL
	}
	desc := "worker " + string(ev.Status.Worker.Phase)
	if r := ev.Status.Worker.Reason; r != "" {
		desc += ": " + r
	}
	return Report{APIURL: apiURL, TokenRef: gw.Spec.Report.TokenSecretRef, Owner: owner, Repo: repo, SHA: sha,
		State: state, Context: "cairn/" + ev.Spec.Project, Description: truncate(desc, 140),
		TargetURL: EventURL(consoleURL, ev.Namespace, ev.Name)}, true
}

// EventURL is the console's stable page of the event ns/name, base being
// the console's URL (".../ui/"); "" when base is empty.
func EventURL(base, ns, name string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/namespaces/" + url.PathEscape(ns) + "/" + api.Plural(api.KindEvent) + "/" + url.PathEscape(name)
}

// truncate cuts s to n bytes at most (GitHub's description limit is 140
// characters), on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
