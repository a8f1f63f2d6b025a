package api

// Secret references: how a Secret's value travels through Executions and
// DeployItems without being written into them.
//
// An Installation importing a Secret hands its templates, for each key,
// the reference string
//
//	((cairn.dev/secret:NAME/KEY@VERSION))
//
// instead of the key's value: NAME is the Secret's name (in the
// installation's namespace), KEY the key, VERSION the Secret's
// resourceVersion when the installation read it (so that a changed Secret
// renders a changed spec, and the deploy items run again). "@VERSION" is
// optional: a hand-written deploy item may leave it out. The deployer of
// an item replaces every reference in its spec.config by the value when it
// runs the item, reading the Secret as the item's creator; the value goes
// only where the deployer puts config (a container unit's 0600 files and
// environment, the target cluster), never into the spec, a status, an
// export, a log or a trace.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// SecretReference names one key of a Secret in the namespace of the object
// whose config carries it.
type SecretReference struct {
	// Name is the Secret's name.
	Name string
	// Key is the key in the Secret's data.
	Key string
	// Version is the Secret's resourceVersion when the reference was
	// rendered; empty when the reference names none. The deployer reads
	// the Secret as it is now, whatever the version says: the version only
	// makes a changed Secret change the spec that carries it.
	Version string
}

// secretRefPattern matches a reference: a Secret name (DNS subdomain
// characters), a key (ConfigMap key characters) and an optional version.
var secretRefPattern = regexp.MustCompile(`\(\(cairn\.dev/secret:([a-z0-9][a-z0-9.-]*)/([-._a-zA-Z0-9]+)(?:@([0-9A-Za-z]+))?\)\)`)

// secretRefProbe is what Probe adds to a reference; see Probe.
const secretRefProbe = "~probe"

// String returns the reference's text, e.g.
// "((cairn.dev/secret:db-password/password@42))".
func (r SecretReference) String() string {
	s := "((cairn.dev/secret:" + r.Name + "/" + r.Key
	if r.Version != "" {
		s += "@" + r.Version
	}
	return s + "))"
}

// FindSecretReferences returns the references in s, in order (repeated ones
// too).
func FindSecretReferences(s string) []SecretReference {
	var out []SecretReference
	for _, m := range secretRefPattern.FindAllStringSubmatch(s, -1) {
		out = append(out, SecretReference{Name: m[1], Key: m[2], Version: m[3]})
	}
	return out
}

// HasSecretReference reports whether raw (JSON, or any text) holds a
// reference.
func HasSecretReference(raw []byte) bool { return secretRefPattern.Match(raw) }

// SecretLookup returns the value of the key a reference names. Its error
// is returned by ResolveSecretReferences as it is: it must say which
// Secret and why, never quote a value.
type SecretLookup func(SecretReference) (string, error)

// ResolveSecretReferences replaces every reference inside the strings of
// the JSON document raw by the value lookup returns for it, looking each
// distinct reference up once, and returns the resolved JSON and the values
// it put in (for redaction). A document without references is returned
// as it is. It does not block beyond lookup. Errors: lookup's, for the
// first reference that fails; and one saying raw is not JSON.
func ResolveSecretReferences(raw json.RawMessage, lookup SecretLookup) (json.RawMessage, []string, error) {
	if !secretRefPattern.Match(raw) {
		return raw, nil, nil
	}
	if !json.Valid(raw) {
		return nil, nil, fmt.Errorf("resolve secret references: the config is not JSON")
	}
	var values []string
	seen := map[string]string{}
	var failed error
	// A reference only ever lies inside a JSON string (its characters need
	// no escaping), so each is replaced by its value escaped as the inside
	// of a JSON string.
	out := secretRefPattern.ReplaceAllFunc(raw, func(m []byte) []byte {
		if failed != nil {
			return m
		}
		if v, ok := seen[string(m)]; ok {
			return []byte(v)
		}
		refs := FindSecretReferences(string(m))
		v, err := lookup(refs[0])
		if err != nil {
			failed = err
			return m
		}
		values = append(values, v)
		quoted, _ := json.Marshal(v) // a string: cannot fail
		inner := string(quoted[1 : len(quoted)-1])
		seen[string(m)] = inner
		return []byte(inner)
	})
	if failed != nil {
		return nil, nil, failed
	}
	return out, values, nil
}

// ProbeSecretReferences returns v (a template's value: strings, maps,
// slices) with every reference in its strings altered in a way
// UnprobeSecretReferences undoes. Rendering a template with a secret
// import probed and then unprobing the output gives the output rendered
// without the probe if, and only if, the template placed the reference as
// it is: a template computing on it (b64enc, upper, sha256sum, len, ...)
// renders something else.
func ProbeSecretReferences(v any) any {
	switch x := v.(type) {
	case string:
		return secretRefPattern.ReplaceAllStringFunc(x, func(m string) string {
			return strings.TrimSuffix(m, "))") + secretRefProbe + "))"
		})
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ProbeSecretReferences(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ProbeSecretReferences(e)
		}
		return out
	}
	return v
}

// UnprobeSecretReferences undoes ProbeSecretReferences in rendered text.
func UnprobeSecretReferences(s string) string {
	return strings.ReplaceAll(s, secretRefProbe+"))", "))")
}
