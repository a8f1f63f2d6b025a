package event

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// secretsCopy is what every Event created from one snapshot copies of its
// project: the data of the project's secrets merged into one map, and the
// conditions guarding the project and each secret. A snapshot serves many
// events (Create reuses the last one), so its secrets are decoded and
// merged once (snapshot.copied), not once per event. It is never modified
// once built: events share data read-only.
type secretsCopy struct {
	// project guards the project being as read.
	project store.Cond
	// data is the merged data of the project's secrets.
	data map[string][]byte
	// secrets guard each secret being as read, in spec.secrets order.
	secrets []store.Cond
	// invalid says that two secrets share a key (the event is Invalid);
	// err that a stored secret does not decode. Either leaves data nil.
	invalid *field.Error
	err     error
}

// copied returns the secrets copy of sn, building it on first use. It
// does not block beyond decoding the secrets.
func (sn *snapshot) copied() *secretsCopy {
	sn.copyOnce.Do(func() { sn.copy = copySecrets(sn) })
	return sn.copy
}

// copySecrets merges the data of sn's secrets (in spec.secrets order)
// and builds the conditions of sn. A key found in two secrets is recorded
// as invalid, a secret that does not decode as err.
func copySecrets(sn *snapshot) *secretsCopy {
	c := &secretsCopy{project: unchanged(api.KindProject, sn.pobj)}
	data := map[string][]byte{}
	from := map[string]string{}
	for _, obj := range sn.secrets {
		name := obj.Name
		var sec api.Secret
		if err := obj.Into(&sec); err != nil {
			c.err = fmt.Errorf("event: stored secret %q does not decode: %w", name, err)
			return c
		}
		for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
			if from[k] != "" {
				c.invalid = field.Invalid(field.NewPath("spec", "project"), sn.project.Name,
					fmt.Sprintf("the project's Secrets %s and %s both have the key %s", from[k], name, k))
				return c
			}
			data[k], from[k] = sec.Data[k], name
		}
		c.secrets = append(c.secrets, unchanged(api.KindSecret, obj))
	}
	c.data = data
	return c
}
