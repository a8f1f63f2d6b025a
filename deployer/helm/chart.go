package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/registry/remote/auth"
	"sigs.k8s.io/yaml"
)

// maxChartBytes bounds a chart archive or an index.yaml read from the
// network or a Secret.
const maxChartBytes = 20 << 20

// errChart marks a chart that cannot be had as configured: not in the
// repository, an unknown version, an archive that does not load. The
// item fails; retrying would not help.
var errChart = errors.New("chart unavailable")

// Loaded is a chart and the digest of its archive.
type Loaded struct {
	Chart *chart.Chart
	// Digest is the sha256 of the chart's .tgz, hex.
	Digest string
}

// SecretReader reads a key of a Secret of the item's namespace. It
// blocks on the API; a missing Secret or key is an error naming it.
type SecretReader func(ctx context.Context, ref SecretRef) ([]byte, error)

// SecretRef names a Secret key, and the config field it comes from (for
// errors).
type SecretRef struct {
	Name, Key, Field string
}

// Fetcher gets charts from their sources.
type Fetcher struct {
	// HTTP is the client of chart repositories and OCI registries.
	HTTP *http.Client
}

// Load gets the chart src names, reading Secrets through secret. It
// blocks on the network. Errors: errChart (wrapped, the item fails) when
// the source does not have the chart or it does not load; others
// (network, API) are worth a retry. No error quotes a credential.
func (f Fetcher) Load(ctx context.Context, src ChartSource, secret SecretReader) (Loaded, error) {
	var data []byte
	var err error
	switch {
	case src.Archive != nil:
		data, err = f.archive(ctx, src.Archive, secret)
	case src.Repository != nil:
		data, err = f.repository(ctx, src.Repository, secret)
	default:
		data, err = f.oci(src.Ref)
	}
	if err != nil {
		return Loaded{}, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return Loaded{}, fmt.Errorf("%w: the chart archive does not load: %v", errChart, err)
	}
	sum := sha256.Sum256(data)
	return Loaded{Chart: ch, Digest: hex.EncodeToString(sum[:])}, nil
}

func (f Fetcher) archive(ctx context.Context, a *ArchiveSource, secret SecretReader) ([]byte, error) {
	if a.Inline != "" {
		b, err := base64.StdEncoding.DecodeString(a.Inline)
		if err != nil {
			return nil, fmt.Errorf("%w: spec.config.chart.archive.inline is not base64", errChart)
		}
		return b, nil
	}
	key := a.SecretRef.Key
	if key == "" {
		key = KeyChart
	}
	b, err := secret(ctx, SecretRef{Name: a.SecretRef.Name, Key: key, Field: "spec.config.chart.archive.secretRef"})
	if err != nil {
		return nil, err
	}
	// The Secret may hold the .tgz itself or its base64.
	if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil {
		return d, nil
	}
	return b, nil
}

// repository reads the repository's index.yaml, picks the version and
// downloads it.
func (f Fetcher) repository(ctx context.Context, r *RepositorySource, secret SecretReader) ([]byte, error) {
	var user, pass string
	if r.Credentials != nil {
		at := "spec.config.chart.repository.credentials.secretRef"
		u, err := secret(ctx, SecretRef{Name: r.Credentials.SecretRef.Name, Key: KeyUsername, Field: at})
		if err != nil {
			return nil, err
		}
		p, err := secret(ctx, SecretRef{Name: r.Credentials.SecretRef.Name, Key: KeyPassword, Field: at})
		if err != nil {
			return nil, err
		}
		user, pass = string(u), string(p)
	}
	base := strings.TrimSuffix(r.URL, "/")
	raw, err := f.get(ctx, base+"/index.yaml", user, pass)
	if err != nil {
		return nil, err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s/index.yaml is not a chart repository index: %v", errChart, base, err)
	}
	cv, err := pickVersion(&idx, r.Name, r.Version)
	if err != nil {
		return nil, err
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: chart %s %s has no URL in %s/index.yaml", errChart, r.Name, cv.Version, base)
	}
	u, err := repo.ResolveReferenceURL(base, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%w: chart %s %s: its URL %q does not resolve: %v", errChart, r.Name, cv.Version, cv.URLs[0], err)
	}
	if !sameHost(base, u) { // credentials go only to the repository's host
		user, pass = "", ""
	}
	return f.get(ctx, u, user, pass)
}

// pickVersion returns the entry of chart name at version (a version or a
// semver range; "" is the latest). Errors wrap errChart and list what
// the repository has.
func pickVersion(idx *repo.IndexFile, name, version string) (*repo.ChartVersion, error) {
	idx.SortEntries()
	vs, ok := idx.Entries[name]
	if !ok || len(vs) == 0 {
		names := make([]string, 0, len(idx.Entries))
		for n := range idx.Entries {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: the repository has no chart %q (it has: %s)", errChart, name, orNone(names))
	}
	cv, err := idx.Get(name, version)
	if err != nil {
		have := make([]string, 0, len(vs))
		for _, v := range vs {
			have = append(have, v.Version)
		}
		return nil, fmt.Errorf("%w: the repository has no version %q of chart %s (it has: %s)", errChart, version, name, strings.Join(have, ", "))
	}
	return cv, nil
}

// get reads url, with basic authentication when user is set. A status
// other than 200 is errChart for 404, another error otherwise.
func (f Fetcher) get(ctx context.Context, u, user, pass string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a URL: %v", errChart, u, err)
	}
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("helm: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxChartBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("helm: GET %s: %w", u, err)
	case len(body) > maxChartBytes:
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", errChart, u, maxChartBytes)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: GET %s: 404 Not Found", errChart, u)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: GET %s: %s (check the credentials' Secret)", errChart, u, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("helm: GET %s: %s", u, resp.Status)
	}
	return body, nil
}

// oci pulls the chart of an oci:// reference (anonymously).
func (f Fetcher) oci(ref string) ([]byte, error) {
	hc := f.client()
	// No credentials file and an authorizer of our own: nothing of the
	// host's registry logins is read or used.
	c, err := registry.NewClient(
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptCredentialsFile(filepath.Join(os.TempDir(), "cairn-helm-no-registry-credentials.json")),
		registry.ClientOptAuthorizer(auth.Client{Client: hc}),
	)
	if err != nil {
		return nil, fmt.Errorf("helm: OCI client: %w", err)
	}
	res, err := c.Pull(strings.TrimPrefix(ref, "oci://"))
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return nil, fmt.Errorf("%w: %s: %v", errChart, ref, err)
		}
		return nil, fmt.Errorf("helm: pull %s: %w", ref, err)
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, fmt.Errorf("%w: %s holds no chart layer", errChart, ref)
	}
	return res.Chart.Data, nil
}

func (f Fetcher) client() *http.Client {
	if f.HTTP != nil {
		return f.HTTP
	}
	return http.DefaultClient
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
