package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yamlv2 "go.yaml.in/yaml/v2"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
)

// Every JSON or YAML request body (object, patch, delete options) is
// checked as text before it is decoded: it must be valid UTF-8, a JSON
// body must not escape half of a UTF-16 surrogate pair, and no object in
// it may repeat a key. The decoders would otherwise replace bad bytes with
// U+FFFD and keep the last of duplicate keys, silently.

// checkJSONText checks a JSON body: UTF-8, surrogate escapes, duplicate
// keys, in that order. A body that is not JSON at all passes: its decoding
// then reports the syntax error with its position.
func checkJSONText(body []byte) error {
	if err := checkUTF8(body); err != nil {
		return err
	}
	if err := checkSurrogates(body); err != nil {
		return err
	}
	return checkDuplicateKeys(body)
}

// checkUTF8 refuses a body that is not valid UTF-8, naming the offset of
// the first invalid byte.
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	off := 0
	for off < len(body) {
		r, n := utf8.DecodeRune(body[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	line, col := position(body, int64(off)+1)
	return api.NewBadRequest("the request body is not valid UTF-8: invalid byte at offset %d (line %d, column %d); "+
		"send text encoded as UTF-8", off, line, col)
}

// checkSurrogates refuses a \u escape of half a UTF-16 surrogate pair
// (a high surrogate not followed by a low one, or a lone low one), which
// encodes no character. Backslashes appear only inside strings in JSON, so
// the escapes are found without tracking strings.
func checkSurrogates(body []byte) error {
	pendingHigh := -1 // offset of a high surrogate escape awaiting its low half
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			if pendingHigh >= 0 {
				return badSurrogate(body, pendingHigh)
			}
			continue
		}
		if i+1 >= len(body) {
			break
		}
		if body[i+1] != 'u' {
			if pendingHigh >= 0 {
				return badSurrogate(body, pendingHigh)
			}
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(body, i+2)
		if !ok {
			break // a malformed escape: the decoder reports it
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if pendingHigh >= 0 {
				return badSurrogate(body, pendingHigh)
			}
			pendingHigh = i
		case r >= 0xDC00 && r < 0xE000:
			if pendingHigh < 0 {
				return badSurrogate(body, i)
			}
			pendingHigh = -1
		default:
			if pendingHigh >= 0 {
				return badSurrogate(body, pendingHigh)
			}
		}
		i += 5
	}
	if pendingHigh >= 0 {
		return badSurrogate(body, pendingHigh)
	}
	return nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func badSurrogate(body []byte, off int) error {
	line, col := position(body, int64(off)+1)
	return api.NewBadRequest("the request body escapes half of a UTF-16 surrogate pair at offset %d (line %d, column %d): "+
		"a \\u escape of U+D800 to U+DFFF must be a high surrogate followed by a low one", off, line, col)
}

// checkDuplicateKeys refuses a JSON body in which an object repeats a key,
// naming the path of each repeated key ("spec.a.b", "spec.items[2].x").
func checkDuplicateKeys(body []byte) error {
	var v any
	strict, err := sigsjson.UnmarshalStrict(body, &v, sigsjson.DisallowDuplicateFields)
	if err != nil || len(strict) == 0 {
		return nil
	}
	var paths []string
	for _, e := range strict {
		if fe, ok := e.(sigsjson.FieldError); ok {
			paths = append(paths, fe.FieldPath())
		}
	}
	return duplicateKeys(paths)
}

// duplicateKeys is the BadRequest for keys repeated at paths.
func duplicateKeys(paths []string) error {
	if len(paths) == 0 {
		return api.NewBadRequest("the request body repeats a key in an object: each key may appear only once")
	}
	const why = "duplicate key: each key may appear once in an object"
	st := badField(api.ShowPath(paths[0]), "%s", why)
	for _, p := range paths[1:] {
		st.Details.Causes = append(st.Details.Causes, api.StatusCause{Field: api.ShowPath(p), Type: "FieldValueDuplicate", Message: why})
	}
	st.Details.Causes[0].Type = "FieldValueDuplicate"
	if len(paths) > 1 {
		st.Message += fmt.Sprintf(" (and %d more duplicate keys)", len(paths)-1)
	}
	return st
}

// yamlToJSON converts a YAML body to JSON, refusing invalid UTF-8 and
// duplicate keys (with their paths) as checkJSONText does for JSON.
func yamlToJSON(body []byte) ([]byte, error) {
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSONStrict(body)
	if err == nil {
		return j, nil
	}
	if _, lenient := yaml.YAMLToJSON(body); lenient == nil {
		// Only the strict checks failed: a key is repeated.
		return nil, duplicateKeys(yamlDuplicates(body))
	}
	return nil, api.NewBadRequest("malformed YAML: %s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
}

// yamlDuplicates returns the paths of the keys repeated in a YAML body.
func yamlDuplicates(body []byte) []string {
	var doc yamlv2.MapSlice
	if err := yamlv2.Unmarshal(body, &doc); err != nil {
		return nil
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case yamlv2.MapSlice:
			seen := make(map[string]bool, len(x))
			for _, it := range x {
				k := fmt.Sprint(it.Key)
				p := k
				if path != "" {
					p = path + "." + k
				}
				if seen[k] {
					out = append(out, p)
				}
				seen[k] = true
				walk(p, it.Value)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", doc)
	return out
}

// decodePatch checks a patch of type pt and returns it as JSON: a merge
// patch's text, that it is a JSON object, and its metadata's field names
// and types (the registry checks its other field names against the
// kind); a JSON patch's text and operations; an apply patch (YAML or
// JSON) as an object whose metadata decodes strictly.
func decodePatch(body []byte, pt api.PatchType) ([]byte, error) {
	switch pt {
	case api.JSONPatch:
		if err := checkJSONText(body); err != nil {
			return nil, err
		}
		if _, err := jsonpatch.DecodePatch(body); err != nil {
			return nil, api.NewBadRequest("the JSON patch does not decode: %s", redact(err.Error()))
		}
		return body, nil
	case api.ApplyPatch:
		j, err := yamlToJSON(body)
		if err != nil {
			return nil, err
		}
		body = j
	}
	if err := checkJSONText(body); err != nil {
		return nil, err
	}
	top, err := decodeTop(body)
	if err != nil {
		return nil, err
	}
	if md, ok := top["metadata"]; ok {
		return body, checkMetadata(md)
	}
	return body, nil
}
