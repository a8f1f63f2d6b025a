package openapi

import (
	"net/http"
	"slices"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"cairn.dev/cairn/api"
)

// The steps of addPaths, one path (or group of paths) each.

// resourcePaths is what the paths of one resource share: its names, where
// it is addressed, and the schemas of its bodies and responses.
type resourcePaths struct {
	kind  string // the kind, in IDs and descriptions
	a     string // the article before kind: "a" or "an"
	ns    string // "Namespaced" in the IDs of a namespaced kind, else ""
	base  string // the collection's path
	named string // the object's path
	// collScope are the path parameters of the collection (the namespace
	// of a namespaced kind), objScope those of the object (and the name).
	collScope, objScope []spec.Parameter

	obj, list, status, deleteBody, patchBody *spec.Schema
}

// pathsOf returns what the paths of r share.
func pathsOf(r Resource) *resourcePaths {
	kind, plural := r.Info.Kind, r.Info.Plural
	p := &resourcePaths{
		kind:       kind,
		a:          article(kind),
		base:       api.BasePath + "/" + plural,
		obj:        refTo(defName(r.Type)),
		list:       refTo(DefinitionName(kind + "List")),
		status:     refTo(defName(statusType)),
		deleteBody: refTo(defName(deleteOptionsType)),
		patchBody:  refTo(defName(patchType)),
	}
	if r.Info.Namespaced {
		p.base = api.BasePath + "/namespaces/{namespace}/" + plural
		p.collScope = []spec.Parameter{pathParam("namespace", "The namespace of the objects.")}
		p.ns = "Namespaced"
	}
	p.named = p.base + "/{name}"
	p.objScope = append(slices.Clone(p.collScope), pathParam("name", "The name of the "+kind+"."))
	return p
}

// allNamespaces is the path that lists or watches a namespaced kind in
// every namespace.
func (p *resourcePaths) allNamespaces() spec.PathItem {
	return spec.PathItem{PathItemProps: spec.PathItemProps{
		Get: operation{verb: "list", action: "list", id: p.kind + "ForAllNamespaces",
			desc: "list or watch objects of kind " + p.kind + " in every namespace", params: listParams,
			produces: []string{mediaJSON, mediaWatch}, responses: map[int]*spec.Schema{http.StatusOK: p.list}}.build(p.kind),
	}}
}

// collection is the collection's path: list or watch, create, delete a
// collection.
func (p *resourcePaths) collection() spec.PathItem {
	kind, ns, obj := p.kind, p.ns, p.obj
	return spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: p.collScope,
		Get: operation{verb: "list", action: "list", id: ns + kind,
			desc: "list or watch objects of kind " + kind, params: listParams,
			produces: []string{mediaJSON, mediaWatch}, responses: map[int]*spec.Schema{http.StatusOK: p.list}}.build(kind),
		Post: operation{verb: "create", action: "post", id: ns + kind,
			desc: "create " + p.a + " " + kind, params: writeParams, body: obj,
			consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj, http.StatusAccepted: obj}}.build(kind),
		Delete: operation{verb: "delete", action: "deletecollection", id: "Collection" + ns + kind,
			desc: "delete a collection of " + kind + " objects", params: deleteCollectionParams, body: p.deleteBody,
			consumes: []string{mediaJSON}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: p.status}}.build(kind),
	}}
}

// object is the object's path: read, replace, patch, delete.
func (p *resourcePaths) object() spec.PathItem {
	kind, ns, obj := p.kind, p.ns, p.obj
	return spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: p.objScope,
		Get: operation{verb: "read", action: "get", id: ns + kind,
			desc: "read the specified " + kind, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj}}.build(kind),
		Put: operation{verb: "replace", action: "put", id: ns + kind,
			desc: "replace the specified " + kind, params: writeParams, body: obj,
			consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
		Patch: operation{verb: "patch", action: "patch", id: ns + kind,
			desc: "partially update the specified " + kind, params: patchParams, body: p.patchBody,
			consumes: patchTypes, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
		Delete: operation{verb: "delete", action: "delete", id: ns + kind,
			desc: "delete " + p.a + " " + kind, params: deleteParams, body: p.deleteBody,
			consumes: []string{mediaJSON}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: p.status, http.StatusAccepted: p.status}}.build(kind),
	}}
}

// addActions adds the kind's actions as plain endpoints under the object
// (or the collection, for a collection action), and returns the names of
// those it added. Actions without a name (a standard verb with rules of
// its own) have no path of their own.
func (p *resourcePaths) addActions(paths map[string]spec.PathItem, acts []Action) map[string]bool {
	actions := map[string]bool{}
	for _, act := range acts {
		if act.Name == "" {
			continue // a standard verb with rules of its own
		}
		actions[act.Name] = true
		path, id, params := p.named+"/"+act.Name, p.ns+p.kind+title(act.Name), p.objScope
		if act.Collection {
			path, id, params = p.base+"/"+act.Name, "Collection"+p.ns+p.kind+title(act.Name), p.objScope[:len(p.objScope)-1]
		}
		item := paths[path]
		item.Parameters = params
		op := operation{verb: strings.ToLower(act.Method), id: id,
			desc: act.Name + " (" + act.Method + "), an action of " + p.kind, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: nil}}.build(p.kind)
		setMethod(&item, act.Method, op)
		paths[path] = item
	}
	return actions
}

// setMethod sets the operation of item for an HTTP method; other methods
// are ignored.
func setMethod(item *spec.PathItem, method string, op *spec.Operation) {
	switch method {
	case http.MethodGet:
		item.Get = op
	case http.MethodPost:
		item.Post = op
	case http.MethodPut:
		item.Put = op
	case http.MethodPatch:
		item.Patch = op
	case http.MethodDelete:
		item.Delete = op
	}
}

// addSubresources adds the paths of the kind's subresources: the status
// (read, replace, patch) and those the server serves itself (trace), read
// only. A subresource that is one of actions has its path already.
func (p *resourcePaths) addSubresources(paths map[string]spec.PathItem, subs []string, actions map[string]bool) {
	for _, sub := range subs {
		switch {
		case sub == "status":
			paths[p.named+"/status"] = p.statusPath()
		case sub != "" && !actions[sub]:
			// A subresource the server serves itself (trace): read only.
			paths[p.named+"/"+sub] = spec.PathItem{PathItemProps: spec.PathItemProps{
				Parameters: p.objScope,
				Get: operation{verb: "read", id: p.ns + p.kind + title(sub),
					desc: "read " + sub + " of the specified " + p.kind, produces: []string{mediaJSON},
					responses: map[int]*spec.Schema{http.StatusOK: nil}}.build(p.kind),
			}}
		}
	}
}

// statusPath is the path of the status subresource: read, replace, patch.
func (p *resourcePaths) statusPath() spec.PathItem {
	kind, id, obj := p.kind, p.ns+p.kind+"Status", p.obj
	return spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: p.objScope,
		Get: operation{verb: "read", action: "get", id: id,
			desc: "read status of the specified " + kind, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj}}.build(kind),
		Put: operation{verb: "replace", action: "put", id: id,
			desc: "replace status of the specified " + kind, params: writeParams, body: obj,
			consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
		Patch: operation{verb: "patch", action: "patch", id: id,
			desc: "partially update status of the specified " + kind, params: patchParams, body: p.patchBody,
			consumes: patchTypes, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
	}}
}
