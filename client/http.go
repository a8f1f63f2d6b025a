package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
)

// httpClient implements Interface over the HTTP API of DESIGN.md.
type httpClient struct {
	base        string // scheme://host[:port], no trailing slash
	token       string
	tokenSource string
	hc          *http.Client

	mu    sync.Mutex
	kinds []api.KindInfo // discovery cache, for kind resolution
}

// NewHTTP returns a client for the server at cfg.Server. It does not
// contact the server; the first call does. Errors: a Server that is not an
// http(s) URL or host:port.
func NewHTTP(cfg Config) (Interface, error) {
	base, err := normalizeServer(cfg.Server)
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tlsConfig, err := cfg.TLSConfig()
		if err != nil {
			return nil, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64 // controllers and benchmarks run many requests in parallel
		tr.TLSClientConfig = tlsConfig
		hc = &http.Client{Transport: tr}
	}
	return &httpClient{base: base, token: cfg.Token, tokenSource: cfg.TokenSource, hc: hc}, nil
}

func normalizeServer(s string) (string, error) {
	if s == "" {
		s = DefaultServer
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("client: server address %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("client: server address %q: want http(s)://host[:port]", s)
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/"), nil
}

// kind resolves a kind name, plural or short name through discovery
// (api.ResolveKind). Discovery is asked once and cached; a name the cache
// does not know asks again, for kinds the server serves since. Errors:
// BadRequest for an empty name, NotFound for a kind the server does not
// serve, the discovery request's errors.
func (c *httpClient) kind(ctx context.Context, name string) (api.KindInfo, error) {
	if name == "" {
		return api.KindInfo{}, api.NewBadRequest("a kind is required")
	}
	c.mu.Lock()
	kinds := c.kinds
	c.mu.Unlock()
	if k, ok := api.ResolveKind(kinds, name); ok {
		return k, nil
	}
	kinds, err := c.fetchKinds(ctx)
	if err != nil {
		return api.KindInfo{}, err
	}
	if k, ok := api.ResolveKind(kinds, name); ok {
		return k, nil
	}
	return api.KindInfo{}, api.NewStatus(api.ReasonNotFound, "the server does not serve the kind %q", name)
}

// path builds BasePath[/namespaces/{ns}]/{plural}[/{name}][/{sub}].
func (c *httpClient) path(ctx context.Context, kind, ns, name string, sub ...string) (string, error) {
	k, err := c.kind(ctx, kind)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(api.BasePath)
	if ns != "" {
		b.WriteString("/namespaces/" + url.PathEscape(ns))
	}
	b.WriteString("/" + k.Plural)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
	}
	for _, s := range sub {
		b.WriteString("/" + url.PathEscape(s))
	}
	return b.String(), nil
}

// do sends one request and returns the response when its status is 2xx;
// otherwise it returns the decoded *api.Status. The caller closes the body.
func (c *httpClient) do(ctx context.Context, method, path string, q url.Values, body []byte, ctype string) (*http.Response, error) {
	return c.doAccept(ctx, method, path, q, body, ctype, "application/json")
}

// doAccept is do asking for the media type accept.
func (c *httpClient) doAccept(ctx context.Context, method, path string, q url.Values, body []byte, ctype, accept string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "cairn-client")
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if f, ok := api.FenceFrom(ctx); ok {
		req.Header.Set(api.HeaderFence, f.Header())
	}
	if b, ok := api.OnBehalfOfFrom(ctx); ok {
		req.Header.Set(api.HeaderOnBehalfOf, b.Header())
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("client: %s %s: %w", method, path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &UnreachableError{URL: c.base, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.decodeError(resp)
	}
	return resp, nil
}

// call sends a request and decodes a JSON answer into out (unless nil). It
// returns the HTTP status code.
func (c *httpClient) call(ctx context.Context, method, path string, q url.Values, in any, ctype string, out any) (int, error) {
	var body []byte
	switch v := in.(type) {
	case nil:
	case []byte:
		body = v
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			return 0, fmt.Errorf("client: encode request: %w", err)
		}
	}
	resp, err := c.do(ctx, method, path, q, body, ctype)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("client: %s %s: %w", method, path, ctx.Err())
			}
			return 0, fmt.Errorf("client: %s %s: decode response: %w", method, path, err)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body) // let the connection be reused
	return resp.StatusCode, nil
}

const jsonType = "application/json"

func (c *httpClient) Create(ctx context.Context, obj *api.Object) (*api.Object, error) {
	if obj.Namespace == "" {
		if err := c.requireClusterScoped(ctx, obj); err != nil {
			return nil, err
		}
	}
	p, err := c.path(ctx, obj.Kind, obj.Namespace, "")
	if err != nil {
		return nil, err
	}
	out := &api.Object{}
	if _, err := c.call(ctx, http.MethodPost, p, nil, obj, jsonType, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *httpClient) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	if name == "" {
		return nil, api.NewBadRequest("a name is required")
	}
	p, err := c.path(ctx, kind, ns, name)
	if err != nil {
		return nil, err
	}
	out := &api.Object{}
	if _, err := c.call(ctx, http.MethodGet, p, nil, nil, "", out); err != nil {
		return nil, err
	}
	return out, nil
}

func listQuery(opts api.ListOptions) url.Values {
	q := url.Values{}
	if opts.LabelSelector != "" {
		q.Set("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	if opts.ResourceVersionMatch != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
		q.Set("resourceVersionMatch", opts.ResourceVersionMatch)
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	return q
}

// ListChunkSize is the page size in which the HTTP client reads a list
// asked for without a limit: no single response holds more objects.
const ListChunkSize = 500

// List reads a limited list (or one continued from a token) in one
// request. A list without a limit is read in pages of ListChunkSize
// (limit + continue, every page at the first page's resourceVersion) and
// returned whole; should the continue token expire between pages (Gone),
// the list is read again in one request.
func (c *httpClient) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	p, err := c.path(ctx, kind, ns, "")
	if err != nil {
		return nil, err
	}
	if opts.Limit > 0 || opts.Continue != "" {
		return c.listPage(ctx, p, opts)
	}
	page := opts
	page.Limit = ListChunkSize
	var out *api.List
	for {
		l, err := c.listPage(ctx, p, page)
		if err != nil {
			if out != nil && errors.Is(err, api.ErrExpired) {
				return c.listPage(ctx, p, opts)
			}
			return nil, err
		}
		if out == nil {
			out = l
		} else {
			out.Items = append(out.Items, l.Items...)
		}
		if l.Continue == "" {
			out.Continue = ""
			return out, nil
		}
		page.Continue = l.Continue
	}
}

// listPage reads one response of a list.
func (c *httpClient) listPage(ctx context.Context, path string, opts api.ListOptions) (*api.List, error) {
	out := &api.List{}
	if _, err := c.call(ctx, http.MethodGet, path, listQuery(opts), nil, "", out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *httpClient) update(ctx context.Context, obj *api.Object, sub ...string) (*api.Object, error) {
	if obj.Name == "" {
		return nil, api.NewBadRequest("metadata.name is required")
	}
	p, err := c.path(ctx, obj.Kind, obj.Namespace, obj.Name, sub...)
	if err != nil {
		return nil, err
	}
	out := &api.Object{}
	if _, err := c.call(ctx, http.MethodPut, p, nil, obj, jsonType, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *httpClient) Update(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return c.update(ctx, obj)
}

func (c *httpClient) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return c.update(ctx, obj, "status")
}

func (c *httpClient) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	if name == "" {
		return nil, api.NewBadRequest("a name is required")
	}
	var sub []string
	if status {
		sub = []string{"status"}
	}
	p, err := c.path(ctx, kind, ns, name, sub...)
	if err != nil {
		return nil, err
	}
	out := &api.Object{}
	if _, err := c.call(ctx, http.MethodPatch, p, nil, patch, "application/merge-patch+json", out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *httpClient) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	if name == "" {
		return nil, false, api.NewBadRequest("a name is required")
	}
	p, err := c.path(ctx, kind, ns, name)
	if err != nil {
		return nil, false, err
	}
	q := url.Values{}
	if opts.Force {
		q.Set("force", "true")
	}
	var body any
	if opts.Preconditions != (api.Preconditions{}) || opts.PropagationPolicy != "" || opts.DryRun {
		body = deleteOptions(opts)
	}
	out := &api.Object{}
	code, err := c.call(ctx, http.MethodDelete, p, q, body, jsonType, out)
	if err != nil {
		return nil, false, err
	}
	return out, code == http.StatusOK, nil
}

func (c *httpClient) fetchKinds(ctx context.Context) ([]api.KindInfo, error) {
	resp, err := c.doAccept(ctx, http.MethodGet, api.BasePath, nil, nil, "", api.KindListMediaType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var d api.Discovery
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return nil, fmt.Errorf("client: decode the server's kinds: %w", err)
	}
	c.mu.Lock()
	c.kinds = d.Kinds
	c.mu.Unlock()
	return d.Kinds, nil
}

// requireClusterScoped answers a create without a namespace as the
// registry would (Invalid, naming metadata.namespace) when the kind is
// namespaced, instead of posting to the all-namespaces path.
func (c *httpClient) requireClusterScoped(ctx context.Context, obj *api.Object) error {
	k, err := c.kind(ctx, obj.Kind)
	if err != nil {
		return err
	}
	if k.Namespaced {
		return api.NewInvalid(obj.Kind, obj.Name, field.ErrorList{
			field.Required(field.NewPath("metadata", "namespace"), "a namespace is required")})
	}
	return nil
}

func (c *httpClient) Kinds(ctx context.Context) ([]api.KindInfo, error) {
	return c.fetchKinds(ctx)
}

func (c *httpClient) actionResponse(ctx context.Context, req ActionRequest) (*http.Response, error) {
	if req.Action == "" {
		return nil, api.NewBadRequest("an action name is required")
	}
	p, err := c.path(ctx, req.Kind, req.Namespace, req.Name, req.Action)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, req.HTTPMethod(), p, req.Query, req.Body, jsonType)
}

func (c *httpClient) Action(ctx context.Context, req ActionRequest) ([]byte, error) {
	resp, err := c.actionResponse(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: action %s: read response: %w", req.Action, err)
	}
	return b, nil
}

func (c *httpClient) ActionStream(ctx context.Context, req ActionRequest) (io.ReadCloser, error) {
	resp, err := c.actionResponse(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// deleteOptions is the body of a DELETE, as every Kubernetes client sends
// it: a metav1.DeleteOptions.
func deleteOptions(opts api.DeleteOptions) *metav1.DeleteOptions {
	d := &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}
	if p := opts.Preconditions; p != (api.Preconditions{}) {
		d.Preconditions = &metav1.Preconditions{}
		if p.UID != "" {
			uid := types.UID(p.UID)
			d.Preconditions.UID = &uid
		}
		if p.ResourceVersion != "" {
			d.Preconditions.ResourceVersion = &p.ResourceVersion
		}
	}
	if opts.PropagationPolicy != "" {
		policy := metav1.DeletionPropagation(opts.PropagationPolicy)
		d.PropagationPolicy = &policy
	}
	if opts.DryRun {
		d.DryRun = []string{metav1.DryRunAll}
	}
	return d
}
