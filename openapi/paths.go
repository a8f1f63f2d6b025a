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

// addPaths adds the paths of resource r: across namespaces (namespaced
// kinds), the collection, the object, its actions and its subresources.
func addPaths(paths map[string]spec.PathItem, r Resource) {
	p := pathsOf(r)
	if r.Info.Namespaced {
		paths[api.BasePath+"/"+r.Info.Plural] = p.allNamespaces()
	}
	paths[p.base] = p.collection()
	paths[p.named] = p.object()
	actions := p.addActions(paths, r.Actions)
	p.addSubresources(paths, r.Info.Subresources, actions)
}

// article is "an" before a vowel, else "a".
func article(noun string) string {
	if strings.ContainsRune("AEIOU", rune(noun[0])) {
		return "an"
	}
	return "a"
}
