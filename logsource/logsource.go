// Package logsource serves the logs of runtime units (an event's worker
// and jobs, a container deploy item's runs) through any API server,
// whichever process runs the controllers. A unit's output is read, in this
// order, from:
//
//  1. the runtime of this process, when it runs the controllers and holds
//     the unit;
//  2. the tail kept through the API once the unit ended (package unitlog:
//     a Secret owned by the unit's owner), when the runtime no longer has
//     the unit (another process ran it, or its host is gone);
//  3. the process leading the controllers (a `cairn server` or a `cairn
//     controller-manager`), to which the request is forwarded for the
//     caller as trace requests are (Forwarder), never twice.
//
// Logs are authorized like the object they belong to (the registry maps
// the logs verb to get): whoever may read the Event or DeployItem may read
// its output, and nobody else.
package logsource

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/runtime"
)

// Forwarder opens logs at the process leading the controllers.
type Forwarder interface {
	// ForwardLogs opens the API path (with query) at the process leading
	// the controllers, for the caller in ctx, and returns the stream of
	// its answer. It blocks until that process answers. Errors: the
	// leader's answer as an *api.Status (NotFound: it holds no such
	// output), ErrNotForwarded when there is no other process to ask (this
	// one leads, or ctx serves a forwarded request), ServiceUnavailable
	// when no process leads or the leader cannot be reached.
	ForwardLogs(ctx context.Context, path string, query url.Values) (io.ReadCloser, error)
}

// ErrNotForwarded: there is no other process to forward to.
var ErrNotForwarded = errors.New("logsource: not forwarded")

// Source opens the logs of units. The zero value serves from the store
// only once Bind gave it a registry. It is safe for concurrent use.
type Source struct {
	mu  sync.RWMutex
	reg *registry.Registry
	rt  runtime.Runtime
	fwd Forwarder
}

// Bind gives the source the registry the kept tails are read from and the
// runtime of this process (nil: it runs no controllers). Call it before
// serving.
func (s *Source) Bind(reg *registry.Registry, rt runtime.Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg, s.rt = reg, rt
}

// SetForwarder gives the source the way to the process leading the
// controllers (nil: none, logs held elsewhere are NotFound).
func (s *Source) SetForwarder(f Forwarder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fwd = f
}

func (s *Source) parts() (*registry.Registry, runtime.Runtime, Forwarder) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.reg, s.rt, s.fwd
}

// Request names the output to open.
type Request struct {
	// Namespace is the owner's; Unit the unit's ID.
	Namespace string
	Unit      string
	// Path and Query are the API request's, for forwarding.
	Path  string
	Query url.Values
	// Follow streams new output until the unit ends.
	Follow bool
}

// Open returns the unit's output, from the first place that holds it (see
// the package doc). Follow applies to a unit still running; a kept tail
// is complete. It blocks on the runtime, one read of the store and
// possibly the leader's answer. Errors: NotFound when nobody holds the
// output (the unit never started); the store's; the Forwarder's.
func (s *Source) Open(ctx context.Context, req Request) (io.ReadCloser, error) {
	reg, rt, fwd := s.parts()
	if rt != nil {
		rc, err := rt.Logs(ctx, req.Unit, runtime.LogOptions{Follow: req.Follow})
		if err == nil {
			return rc, nil
		}
		if !errors.Is(err, runtime.ErrNotFound) {
			return nil, err
		}
	}
	if reg != nil {
		b, ok, err := kept(ctx, reg, req.Namespace, req.Unit)
		if err != nil {
			return nil, err
		}
		if ok {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
	}
	if fwd != nil && !api.Forwarded(ctx) {
		rc, err := fwd.ForwardLogs(ctx, req.Path, req.Query)
		if !errors.Is(err, ErrNotForwarded) {
			return rc, err
		}
	}
	return nil, api.NewStatus(api.ReasonNotFound, "no logs for %s yet: it has not started", req.Unit)
}

// kept returns the output of unit id kept in namespace ns, and whether
// there is one (read as the system: the caller was authorized for the
// owner).
func kept(ctx context.Context, reg *registry.Registry, ns, id string) ([]byte, bool, error) {
	sys := identity.With(api.WithoutOnBehalfOf(ctx), identity.System())
	obj, err := reg.Get(sys, api.KindSecret, ns, api.UnitLogSecretName(id))
	if errors.Is(err, api.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var sec api.Secret
	if err := obj.Into(&sec); err != nil {
		return nil, false, err
	}
	if sec.Annotations[api.AnnotationUnit] != id {
		return nil, false, nil // a Secret of that name that keeps no such output
	}
	return sec.Data[api.UnitLogKey], true, nil
}

// LogsPath is the API path of the logs of kind ns/name.
func LogsPath(kind, ns, name string) string {
	return api.BasePath + "/namespaces/" + ns + "/" + api.Plural(kind) + "/" + name + "/" + api.ActionLogs
}

// Stream is the action result that copies rc to the client as it is read,
// flushing every chunk, until rc ends or ctx does (then rc is closed).
func Stream(rc io.ReadCloser) registry.ActionResult {
	return registry.ActionResult{Stream: func(ctx context.Context, w io.Writer, flush func()) error {
		defer rc.Close()
		stop := context.AfterFunc(ctx, func() { rc.Close() })
		defer stop()
		buf := make([]byte, 32<<10)
		for {
			n, err := rc.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
				flush()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}}
}
