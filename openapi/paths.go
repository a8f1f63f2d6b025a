package openapi

import (
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"cairn.dev/cairn/api"
)

// The paths follow those the Kubernetes API server publishes for a custom
// resource: the collection (list, watch, create, deletecollection), across
// namespaces for namespaced kinds (list, watch), the object (get, replace,
// patch, delete) and its status (get, replace, patch). Each operation
// carries x-kubernetes-group-version-kind and x-kubernetes-action, and the
// query parameters the server understands; kubectl learns from a kind's
// PATCH operation whether the server validates fields (fieldValidation)
// and supports dry run (dryRun). The kinds' actions are described as
// plain endpoints, without those extensions.

// The media types of requests and responses.
const (
	mediaJSON  = "application/json"
	mediaYAML  = "application/yaml"
	mediaWatch = "application/json;stream=watch"
)

// patchTypes are the patches the server applies (no strategic merge
// patch, as for Kubernetes custom resources).
var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyPatchType)}

// The descriptions of the query parameters: Kubernetes' own, which the
// server follows.
var (
	listDocs   = metav1.ListOptions{}.SwaggerDoc()
	patchDocs  = metav1.PatchOptions{}.SwaggerDoc()
	deleteDocs = metav1.DeleteOptions{}.SwaggerDoc()
)

func query(name, typ, doc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:   spec.ParamProps{Name: name, In: "query", Description: doc},
		SimpleSchema: spec.SimpleSchema{Type: typ},
	}
}

func pathParam(name, doc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:   spec.ParamProps{Name: name, In: "path", Required: true, Description: doc},
		SimpleSchema: spec.SimpleSchema{Type: "string"},
	}
}

// The query parameters of each kind of operation.
var (
	selectParams = []spec.Parameter{
		query("continue", "string", listDocs["continue"]),
		query("fieldSelector", "string", listDocs["fieldSelector"]+" cairn selects on metadata.name and metadata.namespace."),
		query("labelSelector", "string", listDocs["labelSelector"]),
		query("limit", "integer", listDocs["limit"]),
		query("resourceVersion", "string", listDocs["resourceVersion"]),
		query("resourceVersionMatch", "string", listDocs["resourceVersionMatch"]),
		query("timeoutSeconds", "integer", listDocs["timeoutSeconds"]),
	}
	listParams = append(slices.Clone(selectParams),
		query("allowWatchBookmarks", "boolean", listDocs["allowWatchBookmarks"]),
		query("sendInitialEvents", "boolean", listDocs["sendInitialEvents"]),
		query("watch", "boolean", listDocs["watch"]),
	)
	writeParams = []spec.Parameter{
		query("dryRun", "string", patchDocs["dryRun"]),
		query("fieldManager", "string", patchDocs["fieldManager"]),
		query("fieldValidation", "string", patchDocs["fieldValidation"]),
	}
	patchParams = append(slices.Clone(writeParams),
		query("force", "boolean", patchDocs["force"]),
	)
	deleteParams = []spec.Parameter{
		query("dryRun", "string", deleteDocs["dryRun"]),
		query("gracePeriodSeconds", "integer", deleteDocs["gracePeriodSeconds"]),
		query("orphanDependents", "boolean", deleteDocs["orphanDependents"]),
		query("propagationPolicy", "string", deleteDocs["propagationPolicy"]),
	}
	deleteCollectionParams = append(slices.Clone(deleteParams), selectParams...)
)

// idGroup is the group in operation IDs and tags: CairnDev.
var idGroup = func() string {
	var b strings.Builder
	for part := range strings.SplitSeq(api.Group, ".") {
		b.WriteString(title(part))
	}
	return b.String()
}()

// idGroupVersion is the group version in operation IDs: CairnDevV1alpha1.
var idGroupVersion = idGroup + title(api.Version)

// tag groups the operations: cairnDev_v1alpha1.
var tag = strings.ToLower(idGroup[:1]) + idGroup[1:] + "_" + api.Version

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// operation describes one operation on a resource.
type operation struct {
	verb     string // in the ID and description: list, create, read, replace, patch, delete, deletecollection
	action   string // x-kubernetes-action; "" for a kind's own actions
	id       string // the ID without the verb (Namespaced<Kind><Sub>)
	desc     string
	params   []spec.Parameter
	body     *spec.Schema
	consumes []string
	produces []string
	// responses are the schemas of the successful responses, by code.
	responses map[int]*spec.Schema
}

func (o operation) build(kind string) *spec.Operation {
	op := &spec.Operation{OperationProps: spec.OperationProps{
		ID:          o.verb + idGroupVersion + o.id,
		Description: o.desc,
		Tags:        []string{tag},
		Consumes:    o.consumes,
		Produces:    o.produces,
		Parameters:  slices.Clone(o.params),
		Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{
			http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}},
		}}},
	}}
	if o.body != nil {
		op.Parameters = append(op.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: o.verb != "delete" && o.verb != "deletecollection", Schema: o.body,
		}})
	}
	for code, s := range o.responses {
		op.Responses.StatusCodeResponses[code] = spec.Response{ResponseProps: spec.ResponseProps{Description: http.StatusText(code), Schema: s}}
	}
	if o.action != "" {
		op.AddExtension(extGVK, gvk(kind))
		op.AddExtension(extAction, o.action)
	}
	return op
}

// addPaths adds the paths of resource r.
func addPaths(paths map[string]spec.PathItem, r Resource) {
	kind, plural := r.Info.Kind, r.Info.Plural
	obj := refTo(defName(r.Type))
	list := refTo(DefinitionName(kind + "List"))
	status := refTo(defName(statusType))
	deleteBody := refTo(defName(deleteOptionsType))
	patchBody := refTo(defName(patchType))
	a := article(kind)

	base := api.BasePath + "/" + plural
	var scope []spec.Parameter
	ns := ""
	if r.Info.Namespaced {
		paths[base] = spec.PathItem{PathItemProps: spec.PathItemProps{
			Get: operation{verb: "list", action: "list", id: kind + "ForAllNamespaces",
				desc: "list or watch objects of kind " + kind + " in every namespace", params: listParams,
				produces: []string{mediaJSON, mediaWatch}, responses: map[int]*spec.Schema{http.StatusOK: list}}.build(kind),
		}}
		base = api.BasePath + "/namespaces/{namespace}/" + plural
		scope = []spec.Parameter{pathParam("namespace", "The namespace of the objects.")}
		ns = "Namespaced"
	}
	paths[base] = spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: scope,
		Get: operation{verb: "list", action: "list", id: ns + kind,
			desc: "list or watch objects of kind " + kind, params: listParams,
			produces: []string{mediaJSON, mediaWatch}, responses: map[int]*spec.Schema{http.StatusOK: list}}.build(kind),
		Post: operation{verb: "create", action: "post", id: ns + kind,
			desc: "create " + a + " " + kind, params: writeParams, body: obj,
			consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj, http.StatusAccepted: obj}}.build(kind),
		Delete: operation{verb: "delete", action: "deletecollection", id: "Collection" + ns + kind,
			desc: "delete a collection of " + kind + " objects", params: deleteCollectionParams, body: deleteBody,
			consumes: []string{mediaJSON}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: status}}.build(kind),
	}}

	named := base + "/{name}"
	scope = append(slices.Clone(scope), pathParam("name", "The name of the "+kind+"."))
	paths[named] = spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: scope,
		Get: operation{verb: "read", action: "get", id: ns + kind,
			desc: "read the specified " + kind, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj}}.build(kind),
		Put: operation{verb: "replace", action: "put", id: ns + kind,
			desc: "replace the specified " + kind, params: writeParams, body: obj,
			consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
		Patch: operation{verb: "patch", action: "patch", id: ns + kind,
			desc: "partially update the specified " + kind, params: patchParams, body: patchBody,
			consumes: patchTypes, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
		Delete: operation{verb: "delete", action: "delete", id: ns + kind,
			desc: "delete " + a + " " + kind, params: deleteParams, body: deleteBody,
			consumes: []string{mediaJSON}, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: status, http.StatusAccepted: status}}.build(kind),
	}}

	actions := map[string]bool{}
	for _, act := range r.Actions {
		if act.Name == "" {
			continue // a standard verb with rules of its own
		}
		actions[act.Name] = true
		path, id, params := named+"/"+act.Name, ns+kind+title(act.Name), scope
		if act.Collection {
			path, id, params = base+"/"+act.Name, "Collection"+ns+kind+title(act.Name), scope[:len(scope)-1]
		}
		item := paths[path]
		item.Parameters = params
		op := operation{verb: strings.ToLower(act.Method), id: id,
			desc: act.Name + " (" + act.Method + "), an action of " + kind, produces: []string{mediaJSON},
			responses: map[int]*spec.Schema{http.StatusOK: nil}}.build(kind)
		switch act.Method {
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
		paths[path] = item
	}

	for _, sub := range r.Info.Subresources {
		switch {
		case sub == "status":
			paths[named+"/status"] = spec.PathItem{PathItemProps: spec.PathItemProps{
				Parameters: scope,
				Get: operation{verb: "read", action: "get", id: ns + kind + "Status",
					desc: "read status of the specified " + kind, produces: []string{mediaJSON},
					responses: map[int]*spec.Schema{http.StatusOK: obj}}.build(kind),
				Put: operation{verb: "replace", action: "put", id: ns + kind + "Status",
					desc: "replace status of the specified " + kind, params: writeParams, body: obj,
					consumes: []string{mediaJSON, mediaYAML}, produces: []string{mediaJSON},
					responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
				Patch: operation{verb: "patch", action: "patch", id: ns + kind + "Status",
					desc: "partially update status of the specified " + kind, params: patchParams, body: patchBody,
					consumes: patchTypes, produces: []string{mediaJSON},
					responses: map[int]*spec.Schema{http.StatusOK: obj, http.StatusCreated: obj}}.build(kind),
			}}
		case sub != "" && !actions[sub]:
			// A subresource the server serves itself (trace): read only.
			paths[named+"/"+sub] = spec.PathItem{PathItemProps: spec.PathItemProps{
				Parameters: scope,
				Get: operation{verb: "read", id: ns + kind + title(sub),
					desc: "read " + sub + " of the specified " + kind, produces: []string{mediaJSON},
					responses: map[int]*spec.Schema{http.StatusOK: nil}}.build(kind),
			}}
		}
	}
}

// article is "an" before a vowel, else "a".
func article(noun string) string {
	if strings.ContainsRune("AEIOU", rune(noun[0])) {
		return "an"
	}
	return "a"
}
