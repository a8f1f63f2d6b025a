package manifest

import (
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"

	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube/config"
)

// redactor removes the values of the item's Secrets from messages bound
// for a status, a log or a trace: the apiserver's refusals quote the
// value they refuse ("expected string, got ...{Value:12345678}").
type redactor []string

// minRedacted is the length below which a value is not redacted: it
// would mangle every message, and guessing it is no secret.
const minRedacted = 4

// secretValues collects the values of the v1 Secrets among objs: each
// leaf of data (as written, base64, and decoded) and of stringData
// (strings, and numbers as the apiserver prints them); and refs, the
// values the config's Secret references resolved to (as written, and
// base64).
func secretValues(objs []config.Object, refs []string) redactor {
	var r redactor
	add := func(s string) {
		if len(s) >= minRedacted {
			r = append(r, s)
		}
	}
	for _, s := range refs {
		add(s)
		add(base64.StdEncoding.EncodeToString([]byte(s)))
	}
	for _, o := range objs {
		if o.Ref.APIVersion != "v1" || o.Ref.Kind != "Secret" {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			walkLeaves(o.Object[field], func(s string) {
				add(s)
				if b, err := base64.StdEncoding.DecodeString(s); field == "data" && err == nil {
					add(string(b))
				}
			})
		}
	}
	// Longest first, so that a value containing another goes whole.
	slices.SortFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

// walkLeaves calls f with every scalar leaf of v, as text.
func walkLeaves(v any, f func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			walkLeaves(e, f)
		}
	case []any:
		for _, e := range x {
			walkLeaves(e, f)
		}
	case string:
		f(x)
	case float64:
		f(strconv.FormatFloat(x, 'f', -1, 64))
		f(strconv.FormatFloat(x, 'g', -1, 64))
	}
}

// String returns msg with every value replaced by <redacted>.
func (r redactor) String(msg string) string {
	for _, s := range r {
		msg = strings.ReplaceAll(msg, s, "<redacted>")
	}
	return msg
}

// outcome redacts o's error message and the item's lastError.
func (r redactor) outcome(item *deployer.Item, o deployer.Outcome) deployer.Outcome {
	if len(r) == 0 {
		return o
	}
	if o.Error != nil {
		e := *o.Error
		e.Message = r.String(e.Message)
		o.Error = &e
	}
	if le := item.Status.LastError; le != nil {
		c := *le
		c.Message = r.String(le.Message)
		item.Status.LastError = &c
	}
	return o
}

// err returns err, or an error of its redacted text when it quoted a
// value (the deployer library logs and records it).
func (r redactor) err(err error) error {
	if err == nil {
		return nil
	}
	if msg := r.String(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}
