package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	sigsjson "sigs.k8s.io/json"

	"cairn.dev/cairn/api"
)

// media is the format of a request body.
type media int

const (
	mediaJSON media = iota
	mediaYAML
)

// contentType is the media type of r's Content-Type, without parameters.
func contentType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// requestMedia reads the Content-Type of an object body: JSON (also when
// absent) or YAML. Anything else is UnsupportedMediaType.
func requestMedia(r *http.Request) (media, error) {
	switch ct := contentType(r); ct {
	case "", "application/json":
		return mediaJSON, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		return mediaYAML, nil
	default:
		return 0, api.NewStatus(api.ReasonUnsupportedMedia,
			"unsupported Content-Type %q: send application/json or application/yaml", short(ct))
	}
}

// patchMedia reads the Content-Type of a PATCH: a JSON merge patch
// (application/merge-patch+json, or application/json), a JSON patch
// (application/json-patch+json) or a server-side apply
// (application/apply-patch+yaml, YAML or JSON). Strategic merge patches
// belong to Kubernetes' built-in kinds and are UnsupportedMediaType, as for
// its custom resources.
func patchMedia(r *http.Request) (api.PatchType, error) {
	switch ct := contentType(r); ct {
	case string(api.MergePatch), "application/json":
		return api.MergePatch, nil
	case string(api.JSONPatch):
		return api.JSONPatch, nil
	case string(api.ApplyPatch), "application/apply-patch+json":
		return api.ApplyPatch, nil
	case "":
		return "", api.NewStatus(api.ReasonUnsupportedMedia,
			"PATCH needs a Content-Type: %s, %s or %s", api.MergePatch, api.JSONPatch, api.ApplyPatch)
	default:
		return "", api.NewStatus(api.ReasonUnsupportedMedia,
			"unsupported patch Content-Type %q: PATCH takes %s (a JSON merge patch), %s (a JSON patch) or %s (server-side apply); "+
				"strategic merge patches are not served", short(ct), api.MergePatch, api.JSONPatch, api.ApplyPatch)
	}
}

// readBody reads the request body, at most MaxBodyBytes (413 beyond),
// within BodyReadTimeout (408 beyond, and the connection is closed).
//
// The deadline is set on the connection for this read only, through
// http.ResponseController: http.Server.ReadTimeout would also bound the
// connection's reads while a watch streams and so cut every watch.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, tooLarge(s.opts.MaxBodyBytes)
	}
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) == nil
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline stays: the server's attempt to drain the rest of
		// the body fails at once and the connection closes.
		w.Header().Set("Connection", "close")
		return nil, api.NewStatus(api.ReasonRequestTimeout,
			"the request body did not arrive within %s: send it at once", s.opts.BodyReadTimeout)
	}
	if deadline {
		// Lift it once read: a streaming response keeps reading the
		// connection to notice when the client leaves.
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge(s.opts.MaxBodyBytes)
		}
		return nil, api.NewBadRequest("cannot read the request body: %v", err)
	}
	return b, nil
}

// limitBodyRead sets the body deadline (BodyReadTimeout from now) on a
// request that may carry a body, before anything else is done with it: a
// request refused before its body is read (unauthenticated, unknown path)
// is answered once the server gave up draining the body, and its
// connection closes. readBody sets the deadline again and lifts it once the
// body is read. Bodiless GETs (watches) get none.
func (s *Server) limitBodyRead(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
}

func tooLarge(max int64) error {
	return api.NewStatus(api.ReasonTooLarge, "the request body is larger than the limit of %d bytes", max)
}

// decodeObject parses a body as one object. Syntax errors name the line and
// column; a metadata field that is unknown or of the wrong type is named.
// Values are never echoed, since they may be secret.
func decodeObject(body []byte, m media) (*api.Object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, api.NewBadRequest("the request body is empty: send an object")
	}
	if m == mediaYAML {
		j, err := yamlToJSON(body)
		if err != nil {
			return nil, err
		}
		body = j
	} else if err := checkJSONText(body); err != nil {
		return nil, err
	}
	top, err := decodeTop(body)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if v, ok := top[f]; ok && string(v) != "null" {
			var str string
			if err := json.Unmarshal(v, &str); err != nil {
				return nil, badField(f, "must be a string")
			}
		}
	}
	if md, ok := top["metadata"]; ok {
		if err := checkMetadata(md); err != nil {
			return nil, err
		}
	}
	o := &api.Object{}
	if err := json.Unmarshal(body, o); err != nil {
		return nil, api.NewBadRequest("cannot decode the object: %s", describeJSONError(body, err))
	}
	return o, nil
}

// decodeTop parses body as a JSON object of raw fields.
func decodeTop(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, api.NewBadRequest("%s", describeJSONError(body, err))
	}
	if top == nil {
		return nil, api.NewBadRequest("the body must be a JSON object, not null")
	}
	return top, nil
}

// checkMetadata decodes metadata strictly: every field name must be one
// of ObjectMeta's, exactly (a name in another case is pointed to the right
// one), and every value of its type.
func checkMetadata(raw json.RawMessage) error {
	if string(raw) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		known := api.MetadataFields()
		for _, f := range slices.Sorted(maps.Keys(fields)) {
			if !slices.Contains(known, f) {
				return api.NewUnknownField("metadata."+f, f, known, "metadata")
			}
		}
	}
	// Deeper names (ownerReferences[0].Kind) matched case-sensitively.
	if strict, err := sigsjson.UnmarshalStrict(raw, &api.ObjectMeta{}); err == nil {
		for _, e := range strict {
			if fe, ok := e.(sigsjson.FieldError); ok {
				what, _, _ := strings.Cut(e.Error(), " \"")
				return badField(api.ShowPath("metadata."+fe.FieldPath()), "%s (field names are case-sensitive)", what)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var meta api.ObjectMeta
	err := dec.Decode(&meta)
	if err == nil {
		return nil
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badField("metadata."+strings.Trim(name, `"`), "unknown field")
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return badField("metadata", "must be a JSON object, not a JSON %s", te.Value)
		}
		return badField("metadata."+te.Field, "cannot use a JSON %s as %s", te.Value, te.Type)
	}
	// Timestamps that do not parse are the only other failure.
	return badField("metadata", "invalid value: %s", redact(err.Error()))
}

// describeJSONError explains a JSON decoding failure with its position in
// body, without echoing values.
func describeJSONError(body []byte, err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		line, col := position(body, se.Offset)
		return fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, se.Error())
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, not a JSON %s", te.Value)
		}
		return fmt.Sprintf("field %q: cannot use a JSON %s as %s", te.Field, te.Value, te.Type)
	}
	return redact(err.Error())
}

// position turns a byte offset into a 1-based line and column.
func position(body []byte, off int64) (line, col int) {
	if off > int64(len(body)) {
		off = int64(len(body))
	}
	before := body[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

// redact drops quoted values from a decoder message.
func redact(msg string) string {
	if i := strings.IndexByte(msg, '"'); i >= 0 {
		if j := strings.LastIndexByte(msg, '"'); j > i {
			return msg[:i] + "<value>" + msg[j+1:]
		}
	}
	return msg
}

// badField is a BadRequest naming the field in its message and causes.
func badField(field, format string, args ...any) *api.Status {
	msg := fmt.Sprintf(format, args...)
	st := api.NewBadRequest("%s: %s", field, msg)
	st.Details = &api.StatusDetails{Causes: []api.StatusCause{{Field: field, Type: "FieldValueInvalid", Message: msg}}}
	return st
}

// short quotes at most 64 bytes of a client-supplied string in messages.
func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// checkObject checks a decoded body against the URL it was sent to and
// fills an empty namespace (and, for PUT, name) from the URL.
func checkObject(o *api.Object, rt *route) error {
	if o.APIVersion != api.APIVersion {
		if o.APIVersion == "" {
			return badField("apiVersion", "required: must be %q", api.APIVersion)
		}
		return badField("apiVersion", "must be %q, not %q", api.APIVersion, short(o.APIVersion))
	}
	if o.Kind != rt.kind.Kind {
		if o.Kind == "" {
			return badField("kind", "required: must be %q", rt.kind.Kind)
		}
		return badField("kind", "must be %q to match the URL, not %q", rt.kind.Kind, short(o.Kind))
	}
	switch {
	case !rt.kind.Namespaced && o.Namespace != "":
		return badField("metadata.namespace", "must be empty: %s objects are not namespaced", rt.kind.Kind)
	case rt.kind.Namespaced && o.Namespace == "":
		o.Namespace = rt.ns
	case rt.kind.Namespaced && o.Namespace != rt.ns:
		return badField("metadata.namespace", "%q does not match the namespace %q of the URL", short(o.Namespace), rt.ns)
	}
	if rt.name != "" {
		switch {
		case o.Name == "":
			o.Name = rt.name
		case o.Name != rt.name:
			return badField("metadata.name", "%q does not match the name %q of the URL", short(o.Name), short(rt.name))
		}
	}
	return nil
}
