package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Errors of Clients.Get. Their messages name fields of the kubeconfig,
// never its values.
var (
	// ErrInvalidKubeconfig: the kubeconfig does not parse, or names no
	// usable context, cluster or user.
	ErrInvalidKubeconfig = errors.New("target: invalid kubeconfig")
	// ErrKubeconfigRefused: the kubeconfig would run a command (exec,
	// auth-provider) or read a file on cairn's host.
	ErrKubeconfigRefused = errors.New("target: kubeconfig refused")
)

// Source is the kubeconfig a Target's client is built from, and the
// version of the Secret it came from.
type Source struct {
	SecretUID, SecretResourceVersion string
	Kubeconfig                       []byte
}

// Client is a connection to the cluster of one Target, built from one
// version of its kubeconfig Secret. Its fields must not be modified:
// callers that need a different configuration use rest.CopyConfig(Config).
type Client struct {
	// SecretUID and SecretResourceVersion identify the Secret version
	// the client was built from.
	SecretUID, SecretResourceVersion string
	// Config is the client-go configuration; it holds credentials, so it
	// is never logged or printed.
	Config *rest.Config
	// Kubernetes is a clientset on Config.
	Kubernetes kubernetes.Interface
}

// Clients caches one Client per Target (key "namespace/name"). A client
// is reused while the Target's Secret keeps its uid and resourceVersion;
// a new version of the Secret replaces it, and Drop forgets it (the
// Target is gone, or names no usable Secret). Deployers take a Target's
// client with Lookup (or Get, when they read the Secret themselves). It
// is safe for concurrent use; no method blocks on the network.
type Clients struct {
	mu sync.Mutex
	m  map[string]*Client
}

// NewClients returns an empty cache.
func NewClients() *Clients { return &Clients{m: map[string]*Client{}} }

// Get returns the client of target built from src: the cached one when it
// came from the same Secret version, otherwise a new one, which replaces
// it. It does not contact the cluster.
//
// Errors: ErrInvalidKubeconfig or ErrKubeconfigRefused (wrapped, with a
// message naming the field at fault, never a value); the cache then holds
// no client for target.
func (c *Clients) Get(target string, src Source) (*Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.m[target]; cur != nil && cur.SecretUID == src.SecretUID && cur.SecretResourceVersion == src.SecretResourceVersion {
		return cur, nil
	}
	delete(c.m, target)
	cfg, err := RESTConfig(src.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKubeconfig, redact(err.Error(), cfg))
	}
	cl := &Client{SecretUID: src.SecretUID, SecretResourceVersion: src.SecretResourceVersion, Config: cfg, Kubernetes: cs}
	c.m[target] = cl
	return cl, nil
}

// Lookup returns the cached client of target, if any.
func (c *Clients) Lookup(target string) (*Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.m[target]
	return cl, ok
}

// Drop forgets the client of target, if any.
func (c *Clients) Drop(target string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, target)
}

// Len returns the number of cached clients.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// lineRE finds the line number in a YAML or JSON parse error, the only
// part of such an error that is safe to repeat (the rest may quote the
// kubeconfig).
var lineRE = regexp.MustCompile(`line \d+`)

// RESTConfig builds a client-go configuration from kubeconfig, with its
// current context. It refuses what would act on cairn's host: exec and
// auth-provider credentials, and file paths (certificates, keys, token
// files).
//
// Errors: ErrInvalidKubeconfig or ErrKubeconfigRefused, wrapped with a
// message that names fields, never values.
func RESTConfig(kubeconfig []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		where := ""
		if l := lineRE.FindString(err.Error()); l != "" {
			where = " (" + l + ")"
		}
		return nil, fmt.Errorf("%w: it does not parse as a kubeconfig%s", ErrInvalidKubeconfig, where)
	}
	ctxName := raw.CurrentContext
	kctx := raw.Contexts[ctxName]
	switch {
	case ctxName == "":
		return nil, fmt.Errorf("%w: current-context is not set (contexts: %s)", ErrInvalidKubeconfig, names(raw.Contexts))
	case kctx == nil:
		return nil, fmt.Errorf("%w: current-context %q is not among its contexts (%s)", ErrInvalidKubeconfig, ctxName, names(raw.Contexts))
	}
	if err := refuseHostAccess(raw, kctx); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKubeconfig, redact(err.Error(), nil))
	}
	return cfg, nil
}

// refuseHostAccess refuses a context whose user runs a command or whose
// user or cluster reads a file.
func refuseHostAccess(raw *clientcmdapi.Config, kctx *clientcmdapi.Context) error {
	if cl := raw.Clusters[kctx.Cluster]; cl != nil && cl.CertificateAuthority != "" {
		return fmt.Errorf("%w: clusters[%s].certificate-authority names a file: use certificate-authority-data", ErrKubeconfigRefused, kctx.Cluster)
	}
	u := raw.AuthInfos[kctx.AuthInfo]
	if u == nil {
		return nil
	}
	at := "users[" + kctx.AuthInfo + "]"
	switch {
	case u.Exec != nil:
		return fmt.Errorf("%w: %s.exec would run a command on cairn's host: use a token or a client certificate", ErrKubeconfigRefused, at)
	case u.AuthProvider != nil:
		return fmt.Errorf("%w: %s.auth-provider would run a plugin on cairn's host: use a token or a client certificate", ErrKubeconfigRefused, at)
	case u.ClientCertificate != "":
		return fmt.Errorf("%w: %s.client-certificate names a file: use client-certificate-data", ErrKubeconfigRefused, at)
	case u.ClientKey != "":
		return fmt.Errorf("%w: %s.client-key names a file: use client-key-data", ErrKubeconfigRefused, at)
	case u.TokenFile != "":
		return fmt.Errorf("%w: %s.tokenFile names a file: use token", ErrKubeconfigRefused, at)
	}
	return nil
}

// ServerVersion asks the cluster of cl for its version, within timeout.
// It blocks until the cluster answers, ctx is done or timeout passes.
// The Probe says the version, or why it was not read (never a
// credential).
func ServerVersion(ctx context.Context, cl *Client, timeout time.Duration) Probe {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := cl.Kubernetes.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		msg := redact(err.Error(), cl.Config)
		if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			return Probe{Reason: ReasonUnauthorized, Message: "the cluster refused the kubeconfig's credentials: " + msg}
		}
		return Probe{Reason: ReasonUnreachable, Message: "the cluster did not answer: " + msg}
	}
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil || v.GitVersion == "" {
		return Probe{Reason: ReasonUnreachable, Message: "the server's /version is not a Kubernetes version"}
	}
	return Probe{Reachable: true, Version: v.GitVersion, Reason: ReasonConnected, Message: "the cluster answered with version " + v.GitVersion}
}

// redact removes cfg's credentials from msg, should a library have
// quoted one.
func redact(msg string, cfg *rest.Config) string {
	if cfg == nil {
		return msg
	}
	for _, s := range []string{cfg.BearerToken, cfg.Password, string(cfg.KeyData), string(cfg.CertData)} {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
}

func names[T any](m map[string]T) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
