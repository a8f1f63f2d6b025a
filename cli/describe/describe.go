// Package describe is `cairn describe KIND NAME`: a readable summary of one
// object — its metadata (uid, generation, resourceVersion, creation and
// deletion times, labels, annotations, finalizers, owners), then its other
// fields and status as YAML. The values of the fields the kind declares
// sensitive (api.KindInfo.Sensitive, from discovery) are never shown: only
// their keys and sizes.
package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
)

// New returns the `describe` command.
func New(s *session.Session) *cobra.Command {
	return &cobra.Command{
		Use:     "describe KIND NAME",
		Short:   "Show the details of one object",
		Example: "  cairn describe installation preview-42\n  cairn describe secret db -n demo",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), s, args[0], args[1])
		},
	}
}

func run(ctx context.Context, s *session.Session, kindName, name string) error {
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	obj, err := c.Get(ctx, kind.Kind, s.NamespaceFor(kind, ""), name)
	if err != nil {
		return err
	}
	return Write(s.Streams.Out, kind, obj, time.Now())
}

// Write prints the description of obj, an object of kind, to w: of the
// fields kind declares sensitive, only keys and sizes. now is the time ages
// are measured to. It returns write errors.
func Write(w io.Writer, kind api.KindInfo, obj *api.Object, now time.Time) error {
	var b strings.Builder
	// Every value from the server is escaped (printer.Escape): no
	// terminal control reaches the output.
	line := func(label, value string) {
		fmt.Fprintf(&b, "%-18s%s\n", printer.Escape(label)+":", printer.Escape(value))
	}
	line("Name", obj.Name)
	if obj.Namespace != "" {
		line("Namespace", obj.Namespace)
	}
	line("Kind", obj.Kind)
	line("UID", obj.UID)
	line("Generation", fmt.Sprint(obj.Generation))
	line("Resource Version", obj.ResourceVersion)
	line("Created", stamp(obj.CreationTimestamp, now))
	if obj.DeletionTimestamp != nil {
		line("Deleting Since", stamp(*obj.DeletionTimestamp, now))
	}
	list(&b, "Labels", pairs(obj.Labels))
	list(&b, "Annotations", pairs(obj.Annotations))
	list(&b, "Finalizers", obj.Finalizers)
	var owners []string
	for _, o := range obj.OwnerReferences {
		s := fmt.Sprintf("%s/%s (uid %s", o.Kind, o.Name, o.UID)
		if o.Controller {
			s += ", controller"
		}
		owners = append(owners, s+")")
	}
	list(&b, "Owners", owners)
	if objs := printer.ManagedObjects(obj.Field(api.FieldStatus)); len(objs) > 0 && !slices.Contains(kind.Sensitive, api.FieldStatus) {
		list(&b, "Managed Objects", objs)
	}

	for _, f := range fieldOrder(obj) {
		title := strings.ToUpper(f[:1]) + f[1:]
		if slices.Contains(kind.Sensitive, f) {
			hidden(&b, title, obj, f)
			continue
		}
		raw := obj.Field(f)
		var scalar any
		if json.Unmarshal(raw, &scalar) == nil {
			switch v := scalar.(type) {
			case map[string]any, []any:
			default:
				line(title, fmt.Sprint(v))
				continue
			}
		}
		y, err := printer.ToYAML(raw)
		if err != nil {
			return fmt.Errorf("describe: %s: %w", f, err)
		}
		b.WriteString(printer.Escape(title) + ":\n")
		for _, l := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
			b.WriteString("  " + printer.Escape(l) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fieldOrder lists the object's other fields: spec first, status last, the
// rest by name between them.
func fieldOrder(obj *api.Object) []string {
	var out []string
	if obj.Field(api.FieldSpec) != nil {
		out = append(out, api.FieldSpec)
	}
	for _, k := range slices.Sorted(maps.Keys(obj.Fields)) {
		if k != api.FieldSpec && k != api.FieldStatus {
			out = append(out, k)
		}
	}
	if obj.Field(api.FieldStatus) != nil {
		out = append(out, api.FieldStatus)
	}
	return out
}

// hidden prints what may be shown of a sensitive field: its keys and the
// size of each value, or the size of the whole value.
func hidden(b *strings.Builder, title string, obj *api.Object, field string) {
	h, _ := printer.Hide(obj, field)
	if h.Sizes == nil {
		fmt.Fprintf(b, "%-18s%d bytes\n", printer.Escape(title)+":", h.Size)
		return
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(h.Sizes)) {
		keys = append(keys, fmt.Sprintf("%s: %d bytes", k, h.Sizes[k]))
	}
	list(b, title, keys)
}

// list prints a label with one value per line, or "<none>". Values are
// escaped (printer.Escape).
func list(b *strings.Builder, label string, values []string) {
	label = printer.Escape(label)
	if len(values) == 0 {
		fmt.Fprintf(b, "%-18s<none>\n", label+":")
		return
	}
	for i, v := range values {
		if i == 0 {
			fmt.Fprintf(b, "%-18s%s\n", label+":", printer.Escape(v))
		} else {
			fmt.Fprintf(b, "%-18s%s\n", "", printer.Escape(v))
		}
	}
}

func pairs(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// stamp renders a time as RFC 3339 with its age: "2026-11-22T10:00:00Z (5m ago)".
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), printer.Age(t, now))
}
