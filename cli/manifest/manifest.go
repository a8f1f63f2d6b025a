// Package manifest reads cairn objects from files, directories or standard
// input, the way `cairn apply -f` and `cairn delete -f` take them:
// multi-document YAML (documents separated by `---` lines), a JSON object or
// a stream of JSON objects, and `kind: List` documents holding items. Every
// object remembers the file and line its document starts at, and every parse
// error names the file and line, so messages read `demo.yaml:12: ...`.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// StdinSource is the Source of objects read from standard input.
const StdinSource = "<stdin>"

// Extensions are the file name endings read from a directory.
var extensions = []string{".yaml", ".yml", ".json"}

// Object is one object of a manifest and the place it was read from.
type Object struct {
	*api.Object
	// Source is the file the object was read from, or StdinSource.
	Source string
	// Line is the 1-based line at which the object's document starts.
	Line int
	// pos locates the object's fields (LineOf).
	pos position
}

// Where returns "source:line", the prefix of every message about the object.
func (o Object) Where() string { return fmt.Sprintf("%s:%d", o.Source, o.Line) }

// Error is a problem at a place in a manifest. Its message reads
// "source:line: message".
type Error struct {
	Source string
	Line   int
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Source, e.Msg)
}

// Read reads every object named by path: a file, a directory (its *.yaml,
// *.yml and *.json files in name order, not recursing) or Stdin ("-"),
// which is read from stdin. It reads everything before returning, and
// returns no objects when anything fails to parse: the error joins one
// *Error per problem found. A path that does not exist, or a directory
// without manifest files, is an error too.
func Read(path string, stdin io.Reader) ([]Object, error) {
	if path == Stdin {
		if stdin == nil {
			return nil, fmt.Errorf("manifest: no standard input to read")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("manifest: read standard input: %w", err)
		}
		return Parse(StdinSource, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		if files, err = dirFiles(path); err != nil {
			return nil, err
		}
	}
	var (
		out  []Object
		errs []error
	)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest: %w", err))
			continue
		}
		objs, err := Parse(f, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, objs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// dirFiles lists the manifest files of dir in name order.
func dirFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !slices.Contains(extensions, strings.ToLower(filepath.Ext(e.Name()))) {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("manifest: %s: no *.yaml, *.yml or *.json files", dir)
	}
	return files, nil // os.ReadDir sorts by name
}

// Parse reads the objects of one manifest. source names it in objects and
// errors. Content starting with '{' or '[' is read as JSON (one value or a
// stream of values), anything else as multi-document YAML; empty documents
// are skipped. The error, if any, joins one *Error per bad document.
func Parse(source string, data []byte) ([]Object, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return parseJSON(source, data)
	}
	return parseYAML(source, data)
}

// document is one YAML document and the line its text starts at.
type document struct {
	text  []byte
	start int // line of the document's first line of text
}

// separator matches a document separator line, optionally with a comment.
var separator = regexp.MustCompile(`^---\s*(#.*)?$`)

// splitYAML cuts data at `---` lines.
func splitYAML(data []byte) []document {
	lines := strings.SplitAfter(string(data), "\n")
	var (
		docs []document
		cur  strings.Builder
	)
	start := 1
	for i, l := range lines {
		if separator.MatchString(strings.TrimRight(l, "\r\n")) {
			docs = append(docs, document{text: []byte(cur.String()), start: start})
			cur.Reset()
			start = i + 2
			continue
		}
		cur.WriteString(l)
	}
	return append(docs, document{text: []byte(cur.String()), start: start})
}

func parseYAML(source string, data []byte) ([]Object, error) {
	var (
		out  []Object
		errs []error
	)
	for _, d := range splitYAML(data) {
		first := firstContentLine(d.text)
		if first == 0 {
			continue // only blanks and comments
		}
		at := d.start + first - 1
		js, err := yaml.YAMLToJSONStrict(d.text)
		if err != nil {
			errs = append(errs, yamlError(source, d.start, at, err))
			continue
		}
		objs, err := decode(source, at, js, parseNode(d.text, d.start))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, objs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// firstContentLine returns the 1-based line of the first line in text that
// is neither blank nor a comment, or 0 when there is none.
func firstContentLine(text []byte) int {
	for i, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return i + 1
		}
	}
	return 0
}

// yamlLine finds "line N: message" in a YAML parser error.
var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// yamlError turns a YAML parser error, whose line numbers count from the
// document's first line, into an *Error at the line in the file.
func yamlError(source string, docStart, at int, err error) *Error {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return &Error{Source: source, Line: at, Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	n, _ := strconv.Atoi(m[1])
	return &Error{Source: source, Line: docStart + n - 1, Msg: m[2]}
}

func parseJSON(source string, data []byte) ([]Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []Object
	for {
		// Skip whitespace to find where the next value starts.
		off := int(dec.InputOffset())
		for off < len(data) && strings.ContainsRune(" \t\r\n\ufeff", rune(data[off])) {
			off++
		}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			at := lineAt(data, off)
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at = lineAt(data, int(se.Offset))
			}
			return nil, &Error{Source: source, Line: at, Msg: jsonMessage(err)}
		}
		objs, err := decode(source, lineAt(data, off), raw, parseNode(raw, lineAt(data, off)))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// jsonMessage makes a JSON decoding error read as a parse problem.
func jsonMessage(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input"
	}
	return strings.ReplaceAll(err.Error(), "json: ", "")
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// decode turns the JSON of one document into objects: itself, the items of
// a `kind: List`, or the elements of a JSON array. pos locates js's text.
func decode(source string, line int, js []byte, pos position) ([]Object, error) {
	bad := func(format string, args ...any) error {
		return &Error{Source: source, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return nil, nil
	}
	switch js[0] {
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(js, &items); err != nil {
			return nil, bad("%s", jsonMessage(err))
		}
		return decodeItems(source, line, items, pos)
	case '{':
	default:
		return nil, bad("expected an object with apiVersion, kind and metadata, found %s", describeJSON(js))
	}
	var o api.Object
	if err := json.Unmarshal(js, &o); err != nil {
		return nil, bad("%s", jsonMessage(err))
	}
	if o.Kind == "List" {
		var items []json.RawMessage
		if raw := o.Field("items"); raw != nil {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, bad("items of a List must be a list of objects")
			}
		}
		return decodeItems(source, line, items, pos)
	}
	if o.Kind == "" {
		return nil, bad("object has no kind")
	}
	if o.Name == "" && o.GenerateName == "" {
		return nil, bad("%s has no metadata.name", o.Kind)
	}
	return []Object{{Object: &o, Source: source, Line: line, pos: pos}}, nil
}

func decodeItems(source string, line int, items []json.RawMessage, pos position) ([]Object, error) {
	var out []Object
	for i, it := range items {
		objs, err := decode(source, line, it, pos.item(i))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// describeJSON names the type of a JSON value without echoing it (it may
// be secret).
func describeJSON(js []byte) string {
	switch js[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
