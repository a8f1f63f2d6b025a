package printer

import (
	"slices"
	"strings"

	"cairn.dev/cairn/api"
)

// The watch side of a Printer (`cairn get -w`): Options.WatchEvents adds an
// EVENT column (ADDED, MODIFIED, DELETED) as kubectl's
// --output-watch-events does, and rows printed after the first table keep
// its column widths, so a long value makes its own row ragged instead of
// shifting every row after it away from the header.

// PrintEvent prints one watch event: a row (or document) for obj, with the
// event type in the EVENT column when Options.WatchEvents is set (in YAML
// or JSON, a {type, object} document, as kubectl prints). A table row
// that would repeat the object's last row (a change no column shows, ages
// aside) is not printed; a deletion always is. It returns write and
// encoding errors.
func (p *Printer) PrintEvent(typ string, obj *api.Object) error {
	if !p.changed(typ, obj) {
		return nil
	}
	if !p.opts.WatchEvents {
		return p.PrintRow(obj)
	}
	switch p.opts.Format {
	case YAML, JSON:
		return p.document(struct {
			Type   string      `json:"type"`
			Object *api.Object `json:"object"`
		}{typ, Redact(obj, p.kind.Sensitive)})
	}
	p.event = typ
	defer func() { p.event = "" }()
	return p.PrintRow(obj)
}

// changed reports whether the event typ of obj shows something its last
// printed row did not, and remembers the row (by uid). Deletions and
// formats other than tables always show.
func (p *Printer) changed(typ string, obj *api.Object) bool {
	if typ == api.Deleted {
		delete(p.shown, obj.UID)
		return true
	}
	key := p.RowKey(obj)
	if key == "" {
		return true
	}
	if prev, ok := p.shown[obj.UID]; ok && prev == key {
		return false
	}
	p.remember(obj, key)
	return true
}

// remember records key as obj's last printed row.
func (p *Printer) remember(obj *api.Object, key string) {
	if p.shown == nil {
		p.shown = map[string]string{}
	}
	p.shown[obj.UID] = key
}

// RowKey is what a table row of obj shows but for its age, which changes
// by itself: two events of an object with the same RowKey would print the
// same row again. "" for formats other than tables.
func (p *Printer) RowKey(obj *api.Object) string {
	if p.opts.Format != Table && p.opts.Format != Wide {
		return ""
	}
	return p.keyOf(p.row(obj))
}

// keyOf is the RowKey of a row: its cells but for AGE and EVENT.
func (p *Printer) keyOf(row []string) string {
	r := slices.Clone(row)
	for i, c := range p.cols {
		if c.header == "AGE" || c.header == "EVENT" {
			r[i] = ""
		}
	}
	return strings.Join(r, "\x00")
}

// eventColumn is the EVENT column: the watch event of the row, ADDED for
// the rows of the first table.
func (p *Printer) eventColumn() col {
	return col{"EVENT", func(_ map[string]any, _ *api.Object) string {
		if p.event == "" {
			return api.Added
		}
		return p.event
	}}
}

// nameColumn is the NAME column: the name, or kind/name with
// Options.KindPrefix.
func (p *Printer) nameColumn() col {
	return col{"NAME", func(_ map[string]any, o *api.Object) string {
		if p.opts.KindPrefix {
			return strings.ToLower(p.kind.Kind) + "/" + o.Name
		}
		return o.Name
	}}
}
