package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Text that comes from the server (names, labels, annotations, spec and
// status strings, messages) may hold characters that drive a terminal: an
// ESC sequence can clear the screen, rewrite earlier lines or set the
// window title, and a bidirectional override can make text read other than
// it is. The CLI never writes them raw: every printer passes such text
// through Escape (or EscapeLines), and YAML and JSON output escapes them
// in the format's own syntax (see EscapeJSON and ToYAML).

// unsafe reports whether r must be escaped: a C0 control, DEL, a C1
// control, or a bidirectional embedding, override or isolate.
func unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Escape returns s with every character that could drive a terminal
// written out visibly: \n, \r and \t as such, other C0 controls and DEL as
// \x1b and \x7f, C1 controls and bidirectional controls as \u009b and
// \u202e, and bytes that are not UTF-8 as \xff. Everything else is kept.
// It is the one function the CLI's printers use on text from the server.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape for text whose newlines lay out its lines (a YAML
// block, a list of errors): it keeps '\n' and escapes the rest.
func EscapeLines(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	clean := true
	for _, r := range s {
		if (r == utf8.RuneError || unsafe(r)) && !(keepNewlines && r == '\n') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// EscapeJSON makes JSON text safe for a terminal: encoding/json escapes C0
// controls, but writes DEL, C1 controls and bidirectional controls raw
// (and a server's JSON kept as it came may hold bytes that are not
// UTF-8); EscapeJSON rewrites them as \u escapes, the bytes as \ufffd as a
// decoder reads them. They can only occur inside strings, where the escape
// means the same character.
func EscapeJSON(raw []byte) []byte {
	if !bytes.ContainsFunc(raw, func(r rune) bool { return r >= 0x7f && unsafe(r) || r == utf8.RuneError }) {
		return raw
	}
	var b bytes.Buffer
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r >= 0x7f && unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.Write(raw[i : i+n])
		}
		i += n
	}
	return b.Bytes()
}

// ToYAML converts JSON to YAML that is safe for a terminal. The YAML
// encoder escapes control characters inside double quotes, but writes
// bidirectional controls raw, in any style; a document holding one is
// written in YAML's JSON-compatible flow form instead, with every such
// character escaped, so that it still reads back as the same value.
func ToYAML(raw []byte) ([]byte, error) {
	raw = EscapeJSON(raw)
	out, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsFunc(out, func(r rune) bool { return r != '\n' && unsafe(r) }) {
		return out, nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
