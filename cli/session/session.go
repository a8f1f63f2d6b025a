// Package session holds what every `cairn` command shares: the standard
// streams, the global flags (--server, --token, --config, --namespace), the
// API client built from them on first use, kind resolution through
// discovery, and the wording of errors shown to users.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/client"
)

// IOStreams are the standard streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Session is the state shared by the commands of one `cairn` invocation.
// The root command binds the global flags to its fields; commands call
// Client and Kind once the flags are parsed. It is safe for concurrent use
// after flag parsing.
type Session struct {
	Streams IOStreams
	// Server, Token, CAFile and ConfigPath are the global flags; "" means
	// unset.
	Server, Token, CAFile, ConfigPath string
	// Namespace is the value of -n/--namespace.
	Namespace string
	// NewClient builds the API client from the resolved config; default
	// client.NewHTTP.
	NewClient func(client.Config) (client.Interface, error)

	mu     sync.Mutex
	cfg    client.Config
	client client.Interface
	kinds  []api.KindInfo
}

// New returns a session writing to streams.
func New(streams IOStreams) *Session {
	return &Session{Streams: streams, Namespace: api.DefaultNamespace}
}

// Config resolves the client configuration from the flags, then
// CAIRN_SERVER/CAIRN_TOKEN/CAIRN_CA_FILE, then the config file. It fails only when the
// config file exists and does not parse.
func (s *Session) Config() (client.Config, error) {
	cfg, err := client.ResolveConfig(s.Server, s.Token, s.ConfigPath)
	if err != nil {
		return cfg, fmt.Errorf("cannot read the cairn client configuration: %w", err)
	}
	if s.CAFile != "" {
		cfg.CAFile, cfg.CertificateAuthorityData = s.CAFile, ""
	}
	return cfg, nil
}

// Client returns the API client, building it on the first call. It does not
// contact the server. Errors: an unreadable config file or a bad server
// address.
func (s *Session) Client() (client.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	newClient := s.NewClient
	if newClient == nil {
		newClient = client.NewHTTP
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot use the cairn server address %q: %w", cfg.Server, err)
	}
	s.cfg, s.client = cfg, c
	return c, nil
}

// Kinds returns the kinds the server serves, asking it once per session.
// It blocks on the discovery request; errors are the client's (server
// unreachable, token rejected, ...).
func (s *Session) Kinds(ctx context.Context) ([]api.KindInfo, error) {
	c, err := s.Client()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	if kinds != nil {
		return kinds, nil
	}
	kinds, err = c.Kinds(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.kinds = kinds
	s.mu.Unlock()
	return kinds, nil
}

// Kind resolves what a user typed — a kind, its plural or a short name, in
// any case — through discovery, with api.ResolveKind. An unknown kind is an
// error listing the kinds the server serves (UnknownKind).
func (s *Session) Kind(ctx context.Context, name string) (api.KindInfo, error) {
	kinds, err := s.Kinds(ctx)
	if err != nil {
		return api.KindInfo{}, err
	}
	if k, ok := api.ResolveKind(kinds, name); ok {
		return k, nil
	}
	return api.KindInfo{}, UnknownKind(kinds, name)
}

// KindClient resolves a kind as Kind does and returns it with the client,
// the pair most commands start with.
func (s *Session) KindClient(ctx context.Context, name string) (api.KindInfo, client.Interface, error) {
	kind, err := s.Kind(ctx, name)
	if err != nil {
		return kind, nil, err
	}
	c, err := s.Client()
	return kind, c, err
}

// UnknownKind is the error for a kind the server does not serve; it lists
// those it does, with their short names.
func UnknownKind(kinds []api.KindInfo, name string) error {
	var served []string
	for _, k := range kinds {
		s := k.Kind
		if len(k.ShortNames) > 0 {
			s += " (" + strings.Join(k.ShortNames, ", ") + ")"
		}
		served = append(served, s)
	}
	slices.Sort(served)
	return fmt.Errorf("unknown kind %q: the server serves %s", name, strings.Join(served, ", "))
}

// NamespaceFor returns the namespace to use for an object of kind k: "" for
// cluster-scoped kinds, else ns when set, else the -n flag.
func (s *Session) NamespaceFor(k api.KindInfo, ns string) string {
	switch {
	case !k.Namespaced:
		return ""
	case ns != "":
		return ns
	default:
		return s.Namespace
	}
}

// Explain rewords an error for the user: an unreachable server says how to
// start one, a rejected token keeps the client's message naming the token's
// source, and an Invalid error lists each field error on its own line.
// Every message is escaped (printer.Escape): text the server sent never
// drives the terminal. Other errors keep their words.
func Explain(err error) error {
	var done *explained
	if err == nil || errors.As(err, &done) {
		return err
	}
	var unreachable *client.UnreachableError
	if errors.As(err, &unreachable) {
		return &explained{err: err, msg: printer.Escape(fmt.Sprintf("cannot reach the cairn server at %s: %s — start it with 'cairn server'",
			unreachable.URL, transportCause(unreachable.Err)))}
	}
	var st *api.Status
	if errors.As(err, &st) && st.Reason == api.ReasonInvalid && st.Details != nil && len(st.Details.Causes) > 0 {
		var b strings.Builder
		prefix := strings.TrimSuffix(err.Error(), st.Message)
		fmt.Fprintf(&b, "%s%s %q is invalid:", printer.Escape(prefix), printer.Escape(st.Details.Kind), st.Details.Name)
		for _, c := range st.Details.Causes {
			fmt.Fprintf(&b, "\n  * %s: %s", printer.Escape(c.Field), printer.Escape(c.Message))
		}
		return &explained{err: err, msg: b.String()}
	}
	if safe := escapeError(err); safe != err.Error() {
		return &explained{err: err, msg: safe}
	}
	return err
}

// escapeError is err's message with terminal controls escaped: a message
// from the server (an *api.Status) on one line, the newlines between
// joined errors, and those of the CLI's own words, kept.
func escapeError(err error) string {
	msg := err.Error()
	switch e := err.(type) {
	case *api.Status:
		return printer.Escape(msg)
	case interface{ Unwrap() []error }:
		var parts []string
		for _, inner := range e.Unwrap() {
			parts = append(parts, inner.Error())
		}
		if strings.Join(parts, "\n") == msg {
			parts = parts[:0]
			for _, inner := range e.Unwrap() {
				parts = append(parts, escapeError(inner))
			}
			return strings.Join(parts, "\n")
		}
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			if prefix, ok := strings.CutSuffix(msg, inner.Error()); ok {
				return printer.EscapeLines(prefix) + escapeError(inner)
			}
		}
	}
	return printer.EscapeLines(msg)
}

// transportCause reduces a transport error to its last, human part
// ("connection refused", "no such host").
func transportCause(err error) string {
	if err == nil {
		return "no answer"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// explained is an error with a better message that still matches the
// original with errors.Is and errors.As.
type explained struct {
	err error
	msg string
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// Resumable reports whether a watch that failed to start or ended with
// err (from Watcher.Err) should be started again from the last version
// seen: it ended cleanly, the server closed it, the connection broke, or
// the server had a transient failure (a 5xx Status) or ended a watcher
// that fell behind (TooManyRequests). Client errors (Gone,
// Unauthorized, BadRequest, ...), an unreachable server and context errors
// are not resumable.
func Resumable(err error) bool {
	if err == nil || errors.Is(err, client.ErrWatchClosed) {
		return true
	}
	if errors.Is(err, client.ErrUnreachable) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var st *api.Status
	if errors.As(err, &st) {
		// A watcher that fell behind is ended with TooManyRequests and
		// should resume from its last version; server faults may pass.
		code := st.Code
		if code == 0 {
			code = st.Reason.Code()
		}
		return code >= 500 || st.Reason == api.ReasonTooManyRequests
	}
	return true
}

// ResumeDelay is how long a command waits before resuming a broken watch.
const ResumeDelay = 200 * time.Millisecond

// Pause blocks for d or until ctx is done, and returns ctx's error then.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
