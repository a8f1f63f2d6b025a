// Package explain is `cairn explain KIND/NAME`: why an object is where it
// is. It prints what the object itself says (deleting since when, the
// finalizers that hold it, its owners, its phase and conditions), then the
// last reconciles the controllers made of it, oldest first, each with its
// steps (❔ check, 🚪 exit, ↪ sub-flow, ✔️ action) and how it ended. The
// steps come from GET .../{plural}/{name}/trace; see docs/trace.md.
//
// Only metadata and status are shown, never the values of the fields a
// kind declares sensitive.
package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

// flagpole holds the flags of `cairn explain`.
type flagpole struct {
	Output     string
	Last       int
	Controller string
	Follow     bool
}

// selection is the reconciles the flags ask for; people (no -o) are not
// shown the reconciles that recorded nothing.
func (f *flagpole) selection(format string) selection {
	return selection{controller: f.Controller, last: f.Last, keepEmpty: format != ""}
}

// New returns the `explain` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME | KIND NAME",
		Short: "Show what the controllers did about an object, and why it stopped",
		Long: "Explain prints what an object says about itself (deleting since when, the finalizers that\n" +
			"hold it, its owners and conditions), then the steps the controllers took in their last\n" +
			"reconciles of it: ❔ check, 🚪 exit, ↪ sub-flow, ✔️ action, oldest first. Traces live in the\n" +
			"controllers' memory: they start empty when the controllers restart.",
		Example: "  cairn explain namespace/demo\n  cairn explain installation preview-42 -n team\n" +
			"  cairn explain secret/db -o yaml\n" +
			"  cairn explain cleaner/preview-42 -n previews --last 3 --controller cleaner -f",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := ParseArgs(args)
			if err != nil {
				return err
			}
			return run(cmd.Context(), s, flags, kind, name)
		},
	}
	cmd.Flags().StringVarP(&flags.Output, "output", "o", "", "print the trace as json or yaml")
	cmd.Flags().IntVar(&flags.Last, "last", 0, "show only the last N reconciles (0: every one kept)")
	cmd.Flags().StringVar(&flags.Controller, "controller", "", "show only the reconciles of this controller (gc, installation, cleaner, ...)")
	cmd.Flags().BoolVarP(&flags.Follow, "follow", "f", false, "keep printing new reconciles as they happen (Ctrl-C to stop)")
	return cmd
}

// ParseArgs reads the object the user named: "KIND/NAME" or "KIND NAME".
// Errors: a missing kind or name, or a name containing "/".
func ParseArgs(args []string) (kind, name string, err error) {
	switch len(args) {
	case 1:
		var ok bool
		if kind, name, ok = strings.Cut(args[0], "/"); !ok {
			return "", "", fmt.Errorf("name the object as KIND/NAME or KIND NAME, not %q", args[0])
		}
	case 2:
		kind, name = args[0], args[1]
		if strings.Contains(kind, "/") {
			return "", "", fmt.Errorf("name the object as KIND/NAME or KIND NAME, not %q", strings.Join(args, " "))
		}
	default:
		return "", "", fmt.Errorf("name one object: KIND/NAME or KIND NAME")
	}
	switch {
	case kind == "":
		return "", "", fmt.Errorf("the kind is missing: name the object as KIND/NAME")
	case name == "":
		return "", "", fmt.Errorf("the name of the %s is missing: name the object as KIND/NAME", kind)
	case strings.Contains(name, "/"):
		return "", "", fmt.Errorf("an object name cannot contain %q: %q", "/", name)
	}
	return kind, name, nil
}

func run(ctx context.Context, s *session.Session, flags *flagpole, kindName, name string) error {
	format := strings.ToLower(flags.Output)
	if format != "" && format != "json" && format != "yaml" {
		return fmt.Errorf("unknown output format %q: use json or yaml", flags.Output)
	}
	if flags.Last < 0 {
		return fmt.Errorf("--last %d: give a number of reconciles, 1 or more (0 shows every one kept)", flags.Last)
	}
	if flags.Follow && format != "" {
		return fmt.Errorf("--follow prints for people: drop -o %s", flags.Output)
	}
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	ns := s.NamespaceFor(kind, "")
	obj, objErr := c.Get(ctx, kind.Kind, ns, name)
	if objErr != nil && !errors.Is(objErr, api.ErrNotFound) {
		return objErr
	}
	ref := api.ObjectReference{Kind: kind.Kind, Namespace: ns, Name: name}
	tr, err := Read(ctx, c, kind.Kind, ns, name)
	if api.ReasonOf(err) == api.ReasonUnavailable && format == "" && obj != nil {
		// No process keeps traces now (no controller leads, say): what
		// the object itself says is still the best answer.
		var b strings.Builder
		writeObject(&b, kind, ref, obj, time.Now())
		fmt.Fprintf(&b, "\nNo trace is available: %s\n", printer.Escape(err.Error()))
		_, err := io.WriteString(s.Streams.Out, b.String())
		return err
	}
	if err != nil {
		err = fmt.Errorf("cannot read the trace of %s: %w", display(ref), err)
		if format == "" && obj != nil {
			// Still say what the object itself says.
			var b strings.Builder
			writeObject(&b, kind, ref, obj, time.Now())
			if _, werr := io.WriteString(s.Streams.Out, b.String()); werr != nil {
				return errors.Join(err, werr)
			}
		}
		return err
	}
	if objErr != nil && len(tr.Reconciles) == 0 {
		return objErr // no such object, and nothing remembered about it
	}
	out := s.Streams.Out
	sel := flags.selection(format)
	switch format {
	case "json":
		var b bytes.Buffer
		tr.Reconciles, _ = sel.apply(tr.Reconciles)
		raw, err := json.Marshal(tr)
		if err == nil {
			err = json.Indent(&b, raw, "", "    ")
		}
		if err != nil {
			return fmt.Errorf("explain: encode: %w", err)
		}
		_, err = out.Write(append(printer.EscapeJSON(b.Bytes()), '\n'))
		return err
	case "yaml":
		tr.Reconciles, _ = sel.apply(tr.Reconciles)
		raw, err := json.Marshal(tr)
		var y []byte
		if err == nil {
			y, err = printer.ToYAML(raw)
		}
		if err != nil {
			return fmt.Errorf("explain: encode YAML: %w", err)
		}
		_, err = out.Write(y)
		return err
	}
	if err := write(out, kind, ref, obj, tr, sel, time.Now()); err != nil || !flags.Follow {
		return err
	}
	return follow(ctx, out, c, ref, sel, lastEnd(tr))
}

// lastEnd is when the last reconcile of tr ended (zero without one).
func lastEnd(tr *api.Trace) time.Time {
	var end time.Time
	for _, r := range tr.Reconciles {
		if r.End.After(end) {
			end = r.End
		}
	}
	return end
}

// Read fetches the trace of the object kind ns/name. A server or object
// without one (404) gives an empty trace, not an error. It blocks on the
// request; other errors are the client's.
func Read(ctx context.Context, c client.Interface, kind, ns, name string) (*api.Trace, error) {
	ref := api.ObjectReference{Kind: kind, Namespace: ns, Name: name}
	raw, err := c.Action(ctx, client.ActionRequest{Method: "GET", Kind: kind, Namespace: ns, Name: name, Action: api.ActionTrace})
	if errors.Is(err, api.ErrNotFound) {
		return api.NewTrace(ref), nil
	}
	if err != nil {
		return nil, err
	}
	var tr api.Trace
	if err := json.Unmarshal(raw, &tr); err != nil {
		return nil, fmt.Errorf("the server's answer is not a trace: %w", err)
	}
	if tr.Object == (api.ObjectReference{}) {
		tr.Object = ref
	}
	if tr.Reconciles == nil {
		tr.Reconciles = []api.TraceReconcile{}
	}
	return &tr, nil
}

// Write prints the explanation of one object for people: the object's own
// state (obj nil when it no longer exists), then each reconcile of tr,
// oldest first, with its steps; reconciles that recorded no step (and no
// error) are counted, not shown. now is the time ages are measured to. The
// values of kind's sensitive fields are never printed. It returns write
// errors.
func Write(w io.Writer, kind api.KindInfo, ref api.ObjectReference, obj *api.Object, tr *api.Trace, now time.Time) error {
	return write(w, kind, ref, obj, tr, selection{}, now)
}

// write is Write of the reconciles sel keeps.
func write(w io.Writer, kind api.KindInfo, ref api.ObjectReference, obj *api.Object, tr *api.Trace, sel selection, now time.Time) error {
	var b strings.Builder
	writeObject(&b, kind, ref, obj, now)
	b.WriteByte('\n')
	var recs []api.TraceReconcile
	var empty int
	if tr != nil {
		recs, empty = sel.apply(tr.Reconciles)
	}
	if empty > 0 {
		fmt.Fprintf(&b, "(%d reconciles that recorded no step are not shown)\n", empty)
	}
	switch n := len(recs); {
	case n == 0 && empty == 0 && sel.controller == "":
		fmt.Fprintf(&b, "No controller has reconciled %s since the controllers started.\n", display(ref))
	case n == 0:
		fmt.Fprintf(&b, "No reconcile of %s to show.\n", display(ref))
	case n == 1:
		b.WriteString("Last reconcile:\n")
	default:
		fmt.Fprintf(&b, "Last %d reconciles, oldest first:\n", len(recs))
	}
	for _, r := range recs {
		b.WriteByte('\n')
		writeReconcile(&b, ref, r, now)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// display names an object in sentences: "namespace/demo",
// "secret/db in namespace team".
func display(ref api.ObjectReference) string {
	s := printer.ObjectName(ref.Kind, ref.Name)
	if ref.Namespace != "" {
		s += " in namespace " + ref.Namespace
	}
	return printer.Escape(s)
}

// status is the part of an object's status explain shows; kinds without
// these fields simply leave them empty.
type status struct {
	Phase      string      `json:"phase"`
	Message    string      `json:"message"`
	Conditions []condition `json:"conditions"`
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// writeObject prints the header line and what holds the object.
func writeObject(b *strings.Builder, kind api.KindInfo, ref api.ObjectReference, obj *api.Object, now time.Time) {
	name := printer.Escape(api.Key(ref.Namespace, ref.Name))
	if obj == nil {
		fmt.Fprintf(b, "%s %s: not found (deleted, or never created)\n", printer.Escape(ref.Kind), name)
		return
	}
	var st status
	if !slices.Contains(kind.Sensitive, api.FieldStatus) {
		_ = json.Unmarshal(obj.Field(api.FieldStatus), &st) // a status of another shape shows nothing
	}
	var state string
	if obj.DeletionTimestamp != nil {
		state = "deleting since " + printer.Age(*obj.DeletionTimestamp, now)
		if st.Phase != "" {
			state += " (phase " + printer.Escape(st.Phase) + ")"
		}
	} else {
		if st.Phase != "" {
			state = printer.Escape(st.Phase) + ", "
		}
		state += "created " + printer.Age(obj.CreationTimestamp, now) + " ago"
	}
	fmt.Fprintf(b, "%s %s: %s\n", printer.Escape(ref.Kind), name, state)
	if obj.DeletionTimestamp != nil {
		if len(obj.Finalizers) == 0 {
			b.WriteString("  no finalizers left: the object is about to disappear\n")
		} else {
			fmt.Fprintf(b, "  finalizers left: %s\n", printer.Escape(strings.Join(obj.Finalizers, ", ")))
		}
	} else if len(obj.Finalizers) > 0 {
		fmt.Fprintf(b, "  finalizers: %s\n", printer.Escape(strings.Join(obj.Finalizers, ", ")))
	}
	if len(obj.OwnerReferences) > 0 {
		var owners []string
		for _, o := range obj.OwnerReferences {
			s := printer.ObjectName(o.Kind, o.Name)
			if o.Controller {
				s += " (controller)"
			}
			owners = append(owners, s)
		}
		fmt.Fprintf(b, "  owners: %s\n", printer.Escape(strings.Join(owners, ", ")))
	}
	if st.Message != "" {
		fmt.Fprintf(b, "  message: %s\n", printer.Escape(st.Message))
	}
	if !slices.Contains(kind.Sensitive, api.FieldStatus) {
		for _, m := range printer.ManagedObjects(obj.Field(api.FieldStatus)) {
			b.WriteString("  managed " + printer.Escape(m) + "\n")
		}
	}
	for _, c := range st.Conditions {
		s := fmt.Sprintf("  condition %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			s += ": " + c.Message
		}
		b.WriteString(printer.Escape(s) + "\n")
	}
}

// writeReconcile prints one reconcile: a line saying who, when, how long
// and how it ended, then its steps indented.
func writeReconcile(b *strings.Builder, ref api.ObjectReference, r api.TraceReconcile, now time.Time) {
	who := printer.Escape(r.Controller)
	if who == "" {
		who = "<unknown controller>"
	}
	if r.Key != "" && r.Key != api.Key(ref.Namespace, ref.Name) {
		who += " (key " + printer.Escape(r.Key) + ")"
	}
	result := r.Result
	if result == "" {
		result = "<no result>"
	}
	if r.Error != "" && !strings.Contains(result, r.Error) {
		result += " (" + r.Error + ")"
	}
	fmt.Fprintf(b, "%s at %s, took %s: %s\n", who, stamp(r.Start, now), took(r.Start, r.End), printer.Escape(result))
	msgs := nameSeedSteps(r.Controller, r.Steps)
	for i, s := range r.Steps {
		fmt.Fprintf(b, "  %s %s\n", s.Type.Symbol(), printer.Escape(msgs[i]))
	}
	if r.Truncated > 0 {
		fmt.Fprintf(b, "  … %d more steps not recorded\n", r.Truncated)
	}
}

// stamp renders a time as RFC 3339 with its age: "2026-11-22T10:00:00Z (5m ago)".
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown time>"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), printer.Age(t, now))
}

// took renders the duration of a reconcile, rounded for people.
func took(start, end time.Time) string {
	d := end.Sub(start)
	switch {
	case start.IsZero() || end.IsZero() || d < 0:
		return "?"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}
