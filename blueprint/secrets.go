package blueprint

import (
	"bytes"
	"fmt"
	"maps"
	"text/template"

	"cairn.dev/cairn/api"
)

// secretComputed explains, in an ErrTemplate, a template that computes
// on a Secret import instead of placing its reference.
const secretComputed = `computes on the secret import %q (with a function such as b64enc, upper, trunc or sha256sum): ` +
	`a Secret import reaches templates as references ((cairn.dev/secret:NAME/KEY@VERSION)), which the deployer replaces ` +
	`by the value when it runs the item; place the reference as it is (quote and toJson keep it whole), ` +
	`and let the deployed program (or a Kubernetes Secret's stringData) do what the template did`

// placed checks that template t, which rendered out with d, places each
// Secret import of d (d.Secrets) as it is: rendered again with that
// import's references probed (api.ProbeSecretReferences), the output,
// unprobed, must be out. A template that computes on a reference (encodes,
// changes, hashes, cuts or measures it) renders something else, which
// would be neither the value nor a reference the deployer can resolve.
// It is pure; the error names the import (never a value).
func placed(t *template.Template, d Data, out string) error {
	for _, name := range d.Secrets {
		v, ok := d.Imports[name]
		if !ok {
			continue
		}
		probed := d
		probed.Imports = maps.Clone(d.Imports)
		probed.Imports[name] = api.ProbeSecretReferences(v)
		var b bytes.Buffer
		if err := t.Execute(&b, probed.template()); err != nil || api.UnprobeSecretReferences(b.String()) != out {
			return fmt.Errorf(secretComputed, name)
		}
	}
	return nil
}
