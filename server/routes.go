package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// target is what a request path addresses.
type target int

const (
	targetDiscovery  target = iota // GET /apis/cairn.dev/v1alpha1
	targetCollection               // .../{plural}
	targetObject                   // .../{plural}/{name}
	targetStatus                   // .../{plural}/{name}/status
	targetAction                   // .../{plural}[/{name}]/{action}
	targetTrace                    // .../{plural}/{name}/trace
	targetDependents               // .../{plural}/{name}/dependents
)

// route is a parsed request path.
type route struct {
	target target
	kind   *registry.Kind
	// ns is the namespace of the path; "" for cluster-scoped kinds and for
	// lists across all namespaces.
	ns     string
	name   string
	action *registry.Action
}

// parseRoute resolves a path under api.BasePath:
//
//	""                                              discovery
//	/namespaces[/{name}[/status|/{action}]]         Namespace objects
//	/namespaces/{ns}/{plural}[/{name}[/status|/{action}]]
//	/{plural}                                       a namespaced kind across namespaces
//	/{plural}[/{name}[/status|/{action}]]           other cluster-scoped kinds
//
// A collection action (.../{plural}/{action}) is chosen over an object of
// that name only when the method matches the action's; a collection action
// with an empty name is served by a DELETE (or a POST) on the collection. Unknown paths
// and kinds return NotFound; a known path with the wrong method returns
// MethodNotAllowed.
//
// escaped is the path as the client sent it (URL.EscapedPath): a segment
// is checked before it is decoded (pathSegments), so that an encoded '/'
// never acts as a separator.
func (s *Server) parseRoute(method, escaped string) (*route, error) {
	if escaped == api.BasePath+"/" {
		escaped = api.BasePath // the one trailing '/' that is served
	}
	all, err := pathSegments(escaped)
	if err != nil {
		return nil, err
	}
	path := "/" + strings.Join(all, "/")
	base := strings.Split(strings.TrimPrefix(api.BasePath, "/"), "/")
	if len(all) < len(base) || !slices.Equal(all[:len(base)], base) {
		return nil, pathNotFound(path)
	}
	segs := all[len(base):]
	if len(segs) == 0 {
		if method != http.MethodGet {
			return nil, methodNotAllowed(method, path, http.MethodGet)
		}
		return &route{target: targetDiscovery}, nil
	}
	if segs[0] == "namespaces" && len(segs) >= 3 && segs[2] != "status" && segs[2] != traceSubresource &&
		segs[2] != dependentsSubresource {
		if k := s.resource(segs[2]); k != nil && k.Namespaced {
			return s.scopedRoute(method, path, k, segs[1], segs[3:])
		}
		if ns := s.resource("namespaces"); len(segs) > 3 || ns == nil || len(actionMethods(ns, segs[2])) == 0 {
			return nil, unknownResource(segs[2])
		}
	}
	k := s.resource(segs[0])
	if k == nil {
		return nil, unknownResource(segs[0])
	}
	if k.Namespaced {
		if len(segs) > 1 {
			return nil, api.NewStatus(api.ReasonNotFound,
				"%s objects are namespaced: address them under %s/namespaces/{namespace}/%s", k.Kind, api.BasePath, k.Plural)
		}
		if method != http.MethodGet {
			return nil, methodNotAllowed(method, path, http.MethodGet)
		}
		return &route{target: targetCollection, kind: k}, nil
	}
	return s.scopedRoute(method, path, k, "", segs[1:])
}

// scopedRoute resolves the segments after {plural} of kind k in namespace ns.
func (s *Server) scopedRoute(method, path string, k *registry.Kind, ns string, segs []string) (*route, error) {
	rt := &route{kind: k, ns: ns}
	switch len(segs) {
	case 0:
		rt.target = targetCollection
		// A kind may serve DELETE on its collection, and POST (a create
		// with rules of its own, such as an Event with its Secret), by an
		// unnamed collection action.
		if method == http.MethodDelete || (method == http.MethodPost && ns != "") {
			if a := findAction(k, "", method, true); a != nil {
				rt.target, rt.action = targetAction, a
			}
		}
	case 1:
		if a := findAction(k, segs[0], method, true); a != nil {
			rt.target, rt.action = targetAction, a
		} else {
			rt.target, rt.name = targetObject, segs[0]
		}
	case 2:
		rt.name = segs[0]
		switch {
		case segs[1] == "status":
			rt.target = targetStatus
		case segs[1] == traceSubresource && len(actionMethods(k, segs[1])) == 0:
			rt.target = targetTrace
		case segs[1] == dependentsSubresource && len(actionMethods(k, segs[1])) == 0:
			rt.target = targetDependents
		default:
			a := findAction(k, segs[1], method, false)
			if a == nil {
				if methods := actionMethods(k, segs[1]); len(methods) > 0 {
					return nil, methodNotAllowed(method, path, methods...)
				}
				return nil, api.NewStatus(api.ReasonNotFound, "%s has no subresource %q", k.Plural, segs[1])
			}
			rt.target, rt.action = targetAction, a
		}
	default:
		return nil, pathNotFound(path)
	}
	if allowed := rt.methods(); rt.target != targetAction && !slices.Contains(allowed, method) {
		return nil, methodNotAllowed(method, path, allowed...)
	}
	return rt, nil
}

// methods are the HTTP methods a non-action route accepts.
func (rt *route) methods() []string {
	switch rt.target {
	case targetCollection:
		if rt.kind.Namespaced && rt.ns == "" {
			return []string{http.MethodGet}
		}
		return []string{http.MethodGet, http.MethodPost, http.MethodDelete}
	case targetObject:
		return []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete}
	case targetStatus:
		return []string{http.MethodGet, http.MethodPut, http.MethodPatch}
	case targetTrace, targetDependents:
		return []string{http.MethodGet}
	}
	return nil
}

// resource returns the kind whose plural is exactly seg, or nil.
func (s *Server) resource(seg string) *registry.Kind {
	k, err := s.reg.Lookup(seg)
	if err != nil || k.Plural != seg {
		return nil
	}
	return k
}

func findAction(k *registry.Kind, name, method string, collection bool) *registry.Action {
	for i := range k.Actions {
		a := &k.Actions[i]
		if a.Name == name && a.Method == method && a.Collection == collection {
			return a
		}
	}
	return nil
}

func actionMethods(k *registry.Kind, name string) []string {
	var out []string
	for _, a := range k.Actions {
		if a.Name == name && !a.Collection {
			out = append(out, a.Method)
		}
	}
	return out
}

// verb is the metrics verb of a request on rt.
func (rt *route) verb(method string, watch bool) string {
	switch rt.target {
	case targetDiscovery:
		return "get"
	case targetCollection:
		switch {
		case method == http.MethodPost:
			return "create"
		case method == http.MethodDelete:
			return "deletecollection"
		case watch:
			return "watch"
		}
		return "list"
	case targetAction:
		return strings.ToLower(method)
	}
	switch method {
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}

// resourceLabel is the metrics resource of rt: the plural, with the
// subresource or action ("events/cancel", "installations/status").
func (rt *route) resourceLabel() string {
	switch rt.target {
	case targetDiscovery:
		return "discovery"
	case targetStatus:
		return rt.kind.Plural + "/status"
	case targetTrace:
		return rt.kind.Plural + "/" + traceSubresource
	case targetDependents:
		return rt.kind.Plural + "/" + dependentsSubresource
	case targetAction:
		if rt.action.Name == "" {
			return rt.kind.Plural
		}
		return rt.kind.Plural + "/" + rt.action.Name
	}
	return rt.kind.Plural
}

func unknownResource(plural string) error {
	return api.NewStatus(api.ReasonNotFound, "the server does not serve the resource %q", plural)
}

func pathNotFound(path string) error {
	return api.NewStatus(api.ReasonNotFound, "the path %q is not served", path)
}

func methodNotAllowed(method, path string, allowed ...string) error {
	return api.NewStatus(api.ReasonMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)",
		method, path, strings.Join(allowed, ", "))
}

// pathSegments splits an escaped URL path into its decoded segments. A
// segment that is empty ("//", a trailing '/'), "." or "..", or that holds
// an encoded '/' (%2F), a '\' or a control character once decoded, is a
// BadRequest naming its position (1 is the first segment), never a
// separator nor a name. The segment itself is not echoed.
func pathSegments(escaped string) ([]string, error) {
	raw := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		pos := i + 1
		seg, err := url.PathUnescape(r)
		if err != nil {
			return nil, badSegment(pos, "is not a valid percent-encoded path segment")
		}
		switch {
		case seg == "":
			return nil, badSegment(pos, "is empty: remove the extra '/'")
		case seg == "." || seg == "..":
			return nil, badSegment(pos, "is %q: relative segments are not allowed", seg)
		case strings.Contains(seg, "/"):
			return nil, badSegment(pos, "contains an encoded '/' (%%2F): a '/' only separates segments, and no name contains one")
		case strings.Contains(seg, "\\"):
			return nil, badSegment(pos, "contains a '\\': no name contains one")
		case strings.ContainsFunc(seg, func(c rune) bool { return c < 0x20 || c == 0x7f }):
			return nil, badSegment(pos, "contains an encoded control character (such as %%00): no name contains one")
		}
		segs[i] = seg
	}
	return segs, nil
}

func badSegment(pos int, format string, args ...any) error {
	return api.NewBadRequest("path segment %d %s", pos, fmt.Sprintf(format, args...))
}
