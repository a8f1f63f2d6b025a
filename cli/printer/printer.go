// Package printer prints cairn objects for `cairn get`: tables built from a
// kind's discovery printer columns (NAME first, NAMESPACE before it across
// namespaces, AGE like kubectl), `-o wide`, `-o name`, `-o yaml` and
// `-o json`. The values of the fields a kind declares sensitive
// (api.KindInfo.Sensitive, from discovery: a Secret's data and stringData)
// never appear in tables, listings or watches, only their keys and sizes;
// the YAML or JSON of a single object fetched by name carries them.
package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/column"
)

// Format is an output format, the value of `-o`.
type Format string

// The output formats.
const (
	Table Format = ""
	Wide  Format = "wide"
	YAML  Format = "yaml"
	JSON  Format = "json"
	Name  Format = "name"
)

// Formats lists the accepted values of `-o`.
func Formats() []string { return []string{"wide", "yaml", "json", "name"} }

// ParseFormat checks the value of `-o`; "" is a table. An unknown format is
// an error listing the accepted ones.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case Table, Wide, YAML, JSON, Name:
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: use one of %s", s, strings.Join(Formats(), ", "))
}

// Options shape a Printer.
type Options struct {
	Format Format
	// AllNamespaces adds a NAMESPACE column first (namespaced kinds only).
	AllNamespaces bool
	// ShowLabels adds a LABELS column last.
	ShowLabels bool
	// NoHeaders leaves out the header line.
	NoHeaders bool
	// Now is the time ages are measured to; default time.Now.
	Now func() time.Time
	// KindPrefix shows names as kind/name, for tables of several kinds.
	KindPrefix bool
	// WatchEvents adds an EVENT column first (see PrintEvent).
	WatchEvents bool
}

// Printer prints objects of one kind to a writer. It remembers the column
// widths of the table it printed, so rows printed later (by a watch) line
// up. It is not safe for concurrent use.
type Printer struct {
	w       io.Writer
	kind    api.KindInfo
	opts    Options
	cols    []col
	widths  []int
	started bool   // header or first document printed
	event   string // the watch event of the row being printed (PrintEvent)
	// shown is the RowKey of the row last printed for each uid (PrintEvent).
	shown map[string]string
}

// col is one table column.
type col struct {
	header string
	value  func(obj map[string]any, o *api.Object) string
}

// New returns a printer of objects of kind to w.
func New(w io.Writer, kind api.KindInfo, opts Options) *Printer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Printer{w: w, kind: kind, opts: opts}
	p.cols = p.columns()
	return p
}

// columns builds the table layout from the kind's printer columns.
func (p *Printer) columns() []col {
	var cols []col
	if p.opts.WatchEvents {
		cols = append(cols, p.eventColumn())
	}
	if p.opts.AllNamespaces && p.kind.Namespaced {
		cols = append(cols, col{"NAMESPACE", func(_ map[string]any, o *api.Object) string { return o.Namespace }})
	}
	cols = append(cols, p.nameColumn())
	hasAge := false
	for _, c := range p.kind.Columns {
		if c.Wide && p.opts.Format != Wide {
			continue
		}
		header := strings.ToUpper(c.Name)
		hasAge = hasAge || header == "AGE"
		cols = append(cols, col{header, func(m map[string]any, _ *api.Object) string {
			return p.cell(m, c)
		}})
	}
	if !hasAge {
		cols = append(cols, col{"AGE", func(_ map[string]any, o *api.Object) string {
			return Age(o.CreationTimestamp, p.opts.Now())
		}})
	}
	if p.opts.ShowLabels {
		cols = append(cols, col{"LABELS", func(_ map[string]any, o *api.Object) string {
			return FormatLabels(o.Labels)
		}})
	}
	return cols
}

// cell renders one printer column of an object.
func (p *Printer) cell(m map[string]any, c api.Column) string {
	return column.Cell(m, c, p.kind.Sensitive, p.opts.Now())
}

// Age renders the time since t the way kubectl does ("5s", "3m20s", "2h",
// "4d"); a zero t is "<unknown>".
func Age(t, now time.Time) string { return column.Age(t, now) }

// FormatLabels renders labels as "k=v,k2=v2" in key order, or "<none>".
func FormatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// ObjectName is how `-o name` and command messages name an object:
// "secret/db", escaped (Escape) since both parts come from the server.
func ObjectName(kind, name string) string { return Escape(strings.ToLower(kind) + "/" + name) }

// PrintObject prints one object that was asked for by name. Its YAML or
// JSON is complete, sensitive values included; a table shows one row. It
// returns write and encoding errors.
func (p *Printer) PrintObject(obj *api.Object) error {
	switch p.opts.Format {
	case YAML, JSON:
		return p.document(obj)
	}
	return p.PrintList([]*api.Object{obj})
}

// PrintList prints several objects: a table with a header (nothing at all
// for no objects), names, or one YAML/JSON List whose sensitive values are
// redacted. It returns write and encoding errors.
func (p *Printer) PrintList(objs []*api.Object) error {
	switch p.opts.Format {
	case YAML, JSON:
		items := make([]*api.Object, 0, len(objs))
		for _, o := range objs {
			items = append(items, Redact(o, p.kind.Sensitive))
		}
		return p.document(struct {
			APIVersion string        `json:"apiVersion"`
			Kind       string        `json:"kind"`
			Items      []*api.Object `json:"items"`
		}{api.APIVersion, "List", items})
	case Name:
		for _, o := range objs {
			if err := p.PrintRow(o); err != nil {
				return err
			}
		}
		return nil
	}
	if len(objs) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(objs)+1)
	if !p.opts.NoHeaders {
		rows = append(rows, p.header())
	}
	for _, o := range objs {
		r := p.row(o)
		rows = append(rows, r)
		p.remember(o, p.keyOf(r))
	}
	p.widths = p.widthsOf(rows)
	p.started = true
	return p.write(rows)
}

// PrintRow prints one more object as it changes (for a watch): a table row
// aligned with the table printed before (a header first if none was), a
// name, or a YAML/JSON document with sensitive values redacted. It returns
// write and encoding errors.
func (p *Printer) PrintRow(obj *api.Object) error {
	switch p.opts.Format {
	case YAML, JSON:
		return p.document(Redact(obj, p.kind.Sensitive))
	case Name:
		_, err := fmt.Fprintln(p.w, ObjectName(obj.Kind, obj.Name))
		return err
	}
	rows := [][]string{p.row(obj)}
	if !p.started && !p.opts.NoHeaders {
		rows = append([][]string{p.header()}, rows...)
	}
	if !p.started || len(p.widths) == 0 {
		p.widths = p.widthsOf(rows) // later rows keep these widths
	}
	p.started = true
	return p.write(rows)
}

func (p *Printer) header() []string {
	h := make([]string, len(p.cols))
	for i, c := range p.cols {
		h[i] = Escape(c.header) // column names come from discovery
	}
	return h
}

func (p *Printer) row(o *api.Object) []string {
	var m map[string]any
	if raw, err := json.Marshal(o); err == nil {
		_ = json.Unmarshal(raw, &m)
	}
	r := make([]string, len(p.cols))
	for i, c := range p.cols {
		r[i] = Escape(c.value(m, o)) // one line, no terminal controls
	}
	return r
}

// widthsOf grows the remembered column widths to fit rows.
func (p *Printer) widthsOf(rows [][]string) []int {
	w := slices.Clone(p.widths)
	if len(w) < len(p.cols) {
		w = make([]int, len(p.cols))
	}
	for _, r := range rows {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	if p.opts.WatchEvents {
		w[0] = max(w[0], len(api.Modified)) // the longest event
	}
	return w
}

// write prints rows padded to the column widths, three spaces apart.
func (p *Printer) write(rows [][]string) error {
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", max(p.widths[i]-len([]rune(c)), 0)+3))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// document prints v as YAML (documents after the first preceded by "---")
// or indented JSON, terminal controls escaped (ToYAML, EscapeJSON).
func (p *Printer) document(v any) error {
	raw, err := marshal(v)
	if err != nil {
		return fmt.Errorf("printer: encode: %w", err)
	}
	var out []byte
	if p.opts.Format == YAML {
		if out, err = ToYAML(raw); err != nil {
			return fmt.Errorf("printer: encode YAML: %w", err)
		}
		if p.started {
			out = append([]byte("---\n"), out...)
		}
	} else {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "    "); err != nil {
			return fmt.Errorf("printer: encode: %w", err)
		}
		out = append(EscapeJSON(b.Bytes()), '\n')
	}
	p.started = true
	_, err = p.w.Write(out)
	return err
}

// marshal encodes v as JSON without escaping <, > and &.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
