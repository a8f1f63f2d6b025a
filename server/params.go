package server

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
)

// The query parameters each kind of request understands. A parameter a
// request does not understand is a BadRequest naming it, never ignored:
// an ignored dryRun writes, an ignored fieldSelector answers about other
// objects. Kind actions read their own parameters and are not checked
// here.
var (
	// anyParams are understood by every request: pretty (the JSON is
	// always compact) and timeout (a bound on the request, e.g. "30s").
	anyParams  = []string{"pretty", "timeout"}
	getParams  = []string{"resourceVersion"}
	listParams = []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
		"resourceVersionMatch", "watch", "allowWatchBookmarks", "sendInitialEvents", "timeoutSeconds"}
	// tableParams shape a Table answer (tables.go).
	tableParams  = []string{"includeObject"}
	writeParams  = []string{"dryRun", "fieldManager", "fieldValidation"}
	patchParams  = []string{"force"}
	deleteParams = []string{"dryRun", "gracePeriodSeconds", "propagationPolicy", "orphanDependents",
		"force", "uid", "resourceVersion"}
)

// checkParams refuses a query parameter that is in none of allowed.
func checkParams(q url.Values, allowed ...[]string) error {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		known := slices.ContainsFunc(allowed, func(set []string) bool { return slices.Contains(set, name) }) ||
			slices.Contains(anyParams, name)
		if known {
			continue
		}
		var all []string
		for _, set := range append(allowed, anyParams) {
			all = append(all, set...)
		}
		slices.Sort(all)
		return badField(short(name), "unknown query parameter for this request (it understands %s)", strings.Join(all, ", "))
	}
	return nil
}

// paramsFor returns the parameters a request on rt with method understands.
func paramsFor(rt *route, method string) [][]string {
	switch {
	case rt.target == targetAction:
		return [][]string{rt.action.Params}
	case rt.target == targetTrace || rt.target == targetDependents:
		return nil
	case rt.target == targetCollection && method == "GET":
		return [][]string{listParams, tableParams}
	case rt.target == targetCollection && method == "POST":
		return [][]string{writeParams}
	case rt.target == targetCollection && method == "DELETE":
		return [][]string{listParams, deleteParams}
	case method == "GET":
		return [][]string{getParams, tableParams}
	case method == "PUT":
		return [][]string{writeParams}
	case method == "PATCH":
		return [][]string{writeParams, patchParams}
	case method == "DELETE":
		return [][]string{deleteParams}
	}
	return nil
}

// requestTimeout reads the timeout parameter: zero when absent.
func requestTimeout(q url.Values) (time.Duration, error) {
	v := q.Get("timeout")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, badField("timeout", "must be a positive duration such as 30s, not %q", short(v))
	}
	return d, nil
}

// dryRunParam reads dryRun: absent, or "All" (the only stage there is).
func dryRunParam(values []string) (bool, error) {
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, badField("dryRun", "must be All, not %q", short(v))
		}
	}
	return len(values) > 0, nil
}

// writeOptions reads the parameters of a create, update or patch.
// fieldValidation may be Strict, Warn or Ignore: cairn always validates
// strictly (an unknown or duplicate field is a BadRequest), so all three
// are served as Strict.
func writeOptions(q url.Values) (api.WriteOptions, error) {
	var o api.WriteOptions
	var err error
	if o.DryRun, err = dryRunParam(q["dryRun"]); err != nil {
		return o, err
	}
	if o.FieldManager = q.Get("fieldManager"); len(o.FieldManager) > 128 ||
		strings.ContainsFunc(o.FieldManager, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return o, badField("fieldManager", "must be at most 128 printable characters")
	}
	switch v := q.Get("fieldValidation"); v {
	case "", metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
	default:
		return o, badField("fieldValidation", "must be Strict, Warn or Ignore, not %q", short(v))
	}
	if o.Force, err = boolParam(q, "force"); err != nil {
		return o, err
	}
	return o, nil
}

// listOptions reads the parameters of a list or watch.
func listOptions(q url.Values) (api.ListOptions, error) {
	opts := api.ListOptions{
		LabelSelector:        q.Get("labelSelector"),
		FieldSelector:        q.Get("fieldSelector"),
		Continue:             q.Get("continue"),
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
	}
	if opts.LabelSelector != "" {
		if _, err := labels.Parse(opts.LabelSelector); err != nil {
			return opts, badField("labelSelector", "invalid selector: %v", err)
		}
	}
	if opts.FieldSelector != "" {
		if _, err := fields.ParseSelector(opts.FieldSelector); err != nil {
			return opts, badField("fieldSelector", "invalid selector: %v", err)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, badField("limit", "must be a non-negative integer, not %q", short(v))
		}
		opts.Limit = n
	}
	if q.Has("sendInitialEvents") {
		b, err := boolParam(q, "sendInitialEvents")
		if err != nil {
			return opts, err
		}
		opts.SendInitialEvents = &b
	}
	return opts, nil
}

// watchParams are the parameters of a watch that the HTTP stream itself
// honours: bookmarks only when asked for, and an end after timeoutSeconds.
type watchParams struct {
	bookmarks bool
	timeout   time.Duration
}

func readWatchParams(q url.Values, opts api.ListOptions) (watchParams, error) {
	var p watchParams
	var err error
	if p.bookmarks, err = boolParam(q, "allowWatchBookmarks"); err != nil {
		return p, err
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents && !p.bookmarks {
		return p, badField("allowWatchBookmarks", "must be true with sendInitialEvents=true: the end of the initial events is a bookmark")
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return p, badField("timeoutSeconds", "must be a non-negative integer, not %q", short(v))
		}
		p.timeout = time.Duration(n) * time.Second
	}
	return p, nil
}

// deleteOptionsOf reads a DELETE's options from its query and its body
// (metav1.DeleteOptions, as every Kubernetes client sends them). When both
// set one option, they must agree. force is cairn's (query only; the
// registry's Authorizer allows it to admins only); gracePeriodSeconds is
// accepted and has no effect (cairn's objects have no grace period).
func deleteOptionsOf(q url.Values, body []byte) (api.DeleteOptions, error) {
	var opts api.DeleteOptions
	force, err := boolParam(q, "force")
	if err != nil {
		return opts, err
	}
	opts.Force = force
	var d metav1.DeleteOptions
	if err := decodeDeleteBody(body, &d); err != nil {
		return opts, err
	}
	if opts.DryRun, err = dryRunParam(append(slices.Clone(q["dryRun"]), d.DryRun...)); err != nil {
		return opts, err
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return opts, badField("gracePeriodSeconds", "must be a non-negative integer, not %q", short(v))
		}
	}
	policy := string(ptrValue(d.PropagationPolicy))
	if err := merge(&policy, q.Get("propagationPolicy"), "propagationPolicy"); err != nil {
		return opts, err
	}
	orphan := d.OrphanDependents
	if q.Has("orphanDependents") {
		b, err := boolParam(q, "orphanDependents")
		if err != nil {
			return opts, err
		}
		if orphan != nil && *orphan != b {
			return opts, badField("orphanDependents", "the body and the query parameter disagree")
		}
		orphan = &b
	}
	if orphan != nil {
		if policy != "" {
			return opts, badField("orphanDependents", "set only one of orphanDependents and propagationPolicy")
		}
		policy = api.PropagationBackground
		if *orphan {
			policy = api.PropagationOrphan
		}
	}
	opts.PropagationPolicy = policy
	opts.Preconditions = api.Preconditions{UID: q.Get("uid"), ResourceVersion: q.Get("resourceVersion")}
	if p := d.Preconditions; p != nil {
		if err := merge(&opts.Preconditions.UID, string(ptrValue(p.UID)), "preconditions.uid"); err != nil {
			return opts, err
		}
		if err := merge(&opts.Preconditions.ResourceVersion, ptrValue(p.ResourceVersion), "preconditions.resourceVersion"); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// merge sets *dst to v when *dst is empty; both set, they must agree.
func merge(dst *string, v, name string) error {
	switch {
	case v == "":
	case *dst == "":
		*dst = v
	case *dst != v:
		return badField(name, "the body and the query parameter disagree")
	}
	return nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// decodeDeleteBody decodes an optional DELETE body as metav1.DeleteOptions,
// strictly: unknown field names (matched case-sensitively) are refused,
// and its apiVersion and kind, when set, must be DeleteOptions'.
func decodeDeleteBody(body []byte, d *metav1.DeleteOptions) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkJSONText(body); err != nil {
		return err
	}
	if err := checkDeleteNames(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(d); err != nil {
		return api.NewBadRequest("delete options: %s", describeJSONError(body, err))
	}
	switch d.APIVersion {
	case "", "v1", "meta.k8s.io/v1", api.APIVersion:
	default:
		return badField("apiVersion", "delete options are meta.k8s.io/v1 (or v1), not %q", short(d.APIVersion))
	}
	if d.Kind != "" && d.Kind != "DeleteOptions" {
		return badField("kind", "must be DeleteOptions, not %q", short(d.Kind))
	}
	return nil
}

// checkDeleteNames refuses delete options whose field names are unknown
// (matched case-sensitively, as everywhere).
func checkDeleteNames(body []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil // the decoding reports it
	}
	known := api.FieldNames(reflect.TypeFor[metav1.DeleteOptions]())
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains(known, k) {
			return api.NewUnknownField(k, k, known, "the delete options")
		}
	}
	var pre map[string]json.RawMessage
	if err := json.Unmarshal(top["preconditions"], &pre); err != nil {
		return nil
	}
	known = api.FieldNames(reflect.TypeFor[metav1.Preconditions]())
	for _, k := range slices.Sorted(maps.Keys(pre)) {
		if !slices.Contains(known, k) {
			return api.NewUnknownField("preconditions."+k, k, known, "preconditions")
		}
	}
	return nil
}
