package helm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common/util"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/deployer/kube"
)

// ProviderStatus is a helm item's status.providerStatus: its release and
// the objects of the release's manifest.
type ProviderStatus struct {
	Release ReleaseStatus `json:"release"`
	kube.ProviderStatus
}

// ReleaseStatus is the item's Helm release as last seen.
type ReleaseStatus struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Revision   int    `json:"revision"`
	Chart      string `json:"chart"`
	AppVersion string `json:"appVersion,omitempty"`
	Status     string `json:"status"`
	// Digest is the digest of the revision's chart and values (Digest).
	Digest string `json:"digest,omitempty"`
}

// last returns the last revision of release name, nil when there is
// none. It blocks on the cluster; the error is the cluster's.
func last(cfg *action.Configuration, name string) (*release.Release, error) {
	r, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || errors.Is(err, driver.ErrNoDeployedReleases) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return v1(r)
}

// v1 converts what Helm's actions return to a v1 release.
func v1(r ri.Releaser) (*release.Release, error) {
	switch x := r.(type) {
	case *release.Release:
		return x, nil
	case release.Release:
		return &x, nil
	}
	return nil, fmt.Errorf("helm: a release of an unknown kind %T", r)
}

// decisionOf is what Decide needs of a revision.
func decisionOf(r *release.Release) *Release {
	if r == nil {
		return nil
	}
	return &Release{Status: string(r.Info.Status), Digest: r.Labels[LabelDigest], Run: r.Labels[LabelRun]}
}

// statusOf records r.
func statusOf(r *release.Release) ReleaseStatus {
	s := ReleaseStatus{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Digest: r.Labels[LabelDigest]}
	if r.Info != nil {
		s.Status = string(r.Info.Status)
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		s.Chart = r.Chart.Metadata.Name + "-" + r.Chart.Metadata.Version
		s.AppVersion = r.Chart.Metadata.AppVersion
	}
	return s
}

// objects returns the objects of r's manifest (hooks excluded), in Helm's
// install order; a namespaced object without a namespace gets the
// release's. mapper tells the scope of a kind; an unknown kind is
// taken as namespaced.
func objects(r *release.Release, mapper meta.RESTMapper) ([]kube.ObjectRef, error) {
	var refs []kube.ObjectRef
	for _, m := range releaseutil.SplitManifests(r.Manifest) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(m), &head); err != nil {
			return nil, fmt.Errorf("helm: release %s: a manifest does not decode: %w", r.Name, err)
		}
		if head.Kind == "" || head.Metadata.Name == "" {
			continue
		}
		ref := kube.ObjectRef{APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace}
		if ref.Namespace == "" && namespaced(mapper, ref) {
			ref.Namespace = r.Namespace
		}
		refs = append(refs, ref)
	}
	slices.SortStableFunc(refs, func(a, b kube.ObjectRef) int { return installRank(a.Kind) - installRank(b.Kind) })
	return refs, nil
}

// namespaced reports whether ref's kind is namespaced (true when the
// mapper does not know it).
func namespaced(mapper meta.RESTMapper, ref kube.ObjectRef) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || mapper == nil {
		return true
	}
	m, err := mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return true
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

// installRank orders kinds as Helm installs them (releaseutil.InstallOrder).
func installRank(kind string) int {
	if i := slices.Index(releaseutil.InstallOrder, kind); i >= 0 {
		return i
	}
	return len(releaseutil.InstallOrder)
}

// allValues returns the release's values merged over its chart's
// defaults, as `helm get values --all` shows them.
func allValues(r *release.Release) (map[string]any, error) {
	if r.Chart == nil {
		return r.Config, nil
	}
	v, err := util.CoalesceValues(r.Chart, r.Config)
	if err != nil {
		return nil, fmt.Errorf("helm: values of release %s: %w", r.Name, err)
	}
	return v, nil
}

// redactor removes the string values of a release's values from messages
// bound for a status, a log or a trace: the values may carry Secrets
// (an import from a Secret rendered into them), and Kubernetes' and
// Helm's errors quote offending values.
type redactor []string

// minRedacted is the length below which a value is not redacted (it
// would mangle every message, and guessing it is no secret).
const minRedacted = 4

// newRedactor collects the string leaves of values.
func newRedactor(values map[string]any) redactor {
	var r redactor
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			if len(x) >= minRedacted {
				r = append(r, x)
			}
		}
	}
	walk(values)
	// Longest first, so that a value containing another goes whole.
	slices.SortFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

// String returns msg with every value replaced by <redacted>.
func (r redactor) String(msg string) string {
	for _, s := range r {
		msg = strings.ReplaceAll(msg, s, "<redacted>")
	}
	return msg
}
