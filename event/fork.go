package event

import "cairn.dev/cairn/api"

// SharesSecrets reports whether an Event ev of project p gets the copy of
// the project's secrets: always, unless ev comes from a fork (its
// spec.labels say fork: "true") and p does not set trustForks. A fork's
// pull request runs code its author wrote; without trust its worker must
// not read what the project keeps secret (Brigade's fork-PR leak).
func SharesSecrets(p *api.Project, ev *api.Event) bool {
	return p.Spec.TrustForks || ev.Spec.Labels[api.EventLabelFork] != "true"
}
