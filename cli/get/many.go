package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

// target is what one kind of a `get` asks for: its objects by name, or
// (no names) its list.
type target struct {
	kind  string
	names []string
}

// parseTargets reads get's arguments as kubectl does: KIND [NAME...], with
// KIND possibly a comma-separated list of kinds (then without names), or
// KIND/NAME arguments, possibly of several kinds. Targets keep the order
// of the arguments.
func parseTargets(args []string) ([]target, error) {
	slashed := 0
	for _, a := range args {
		if strings.Contains(a, "/") {
			slashed++
		}
	}
	switch {
	case slashed > 0 && slashed < len(args):
		return nil, fmt.Errorf("give either KIND NAME... or KIND/NAME..., not both")
	case slashed > 0:
		var out []target
		at := map[string]int{}
		for _, a := range args {
			kind, name, _ := strings.Cut(a, "/")
			if kind == "" || name == "" || strings.Contains(name, "/") {
				return nil, fmt.Errorf("%q is not KIND/NAME", a)
			}
			k := strings.ToLower(kind)
			if i, ok := at[k]; ok {
				out[i].names = append(out[i].names, name)
				continue
			}
			at[k] = len(out)
			out = append(out, target{kind: kind, names: []string{name}})
		}
		return out, nil
	}
	kinds := strings.Split(args[0], ",")
	if len(kinds) == 1 {
		return []target{{kind: args[0], names: args[1:]}}, nil
	}
	if len(args) > 1 {
		return nil, fmt.Errorf("names need a single kind: give KIND NAME... or KIND/NAME...")
	}
	out := make([]target, 0, len(kinds))
	for _, k := range kinds {
		if k == "" {
			return nil, fmt.Errorf("%q has an empty kind", args[0])
		}
		out = append(out, target{kind: k})
	}
	return out, nil
}

// runMany prints the objects of several kinds, one table (or list) per
// kind that has any, in the order asked for; names not found are reported
// together at the end, after everything found is printed. Watching and
// trees take one kind.
func runMany(ctx context.Context, s *session.Session, flags *flagpole, targets []target) error {
	format, err := printer.ParseFormat(flags.Output)
	if err != nil {
		return err
	}
	switch {
	case flags.Watch:
		return fmt.Errorf("-w follows one kind: name a single kind to watch")
	case flags.Tree:
		return fmt.Errorf("--tree needs installations named, of one kind")
	case flags.ChunkSize < 0:
		return fmt.Errorf("--chunk-size must not be negative, got %d", flags.ChunkSize)
	}
	printed := 0
	var missing []error
	var empty []string // kinds listed with nothing found
	for _, tg := range targets {
		if len(tg.names) > 0 && (flags.AllNamespaces || flags.Selector != "") {
			return fmt.Errorf("names cannot be combined with -A or -l")
		}
		kind, c, err := s.KindClient(ctx, tg.kind)
		if err != nil {
			return err
		}
		ns := s.NamespaceFor(kind, "")
		if flags.AllNamespaces {
			ns = ""
		}
		var objs []*api.Object
		if len(tg.names) > 0 {
			var errs []error
			objs, errs, err = getNamed(ctx, c, kind, ns, tg.names)
			missing = append(missing, errs...)
		} else {
			objs, _, err = listAll(ctx, c, kind, ns, api.ListOptions{LabelSelector: flags.Selector, Limit: flags.ChunkSize})
		}
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			if len(tg.names) == 0 {
				empty = append(empty, printer.Escape(kind.Plural))
			}
			continue
		}
		if printed > 0 {
			if err := separate(s.Streams.Out, format); err != nil {
				return err
			}
		}
		p := printer.New(s.Streams.Out, kind, printer.Options{
			Format: format, AllNamespaces: flags.AllNamespaces && kind.Namespaced,
			ShowLabels: flags.ShowLabels, NoHeaders: flags.NoHeaders, KindPrefix: true,
		})
		if err := p.PrintList(objs); err != nil {
			return err
		}
		printed++
	}
	if printed == 0 && len(missing) == 0 {
		if _, err := fmt.Fprintln(s.Streams.ErrOut, "No resources found."); err != nil {
			return err
		}
	} else if len(empty) > 0 {
		if _, err := fmt.Fprintf(s.Streams.ErrOut, "No %s found.\n", strings.Join(empty, ", ")); err != nil {
			return err
		}
	}
	return errors.Join(missing...)
}

// separate writes what goes between the outputs of two kinds: a blank line
// between tables, a document separator between YAML lists.
func separate(w io.Writer, f printer.Format) error {
	var err error
	switch f {
	case printer.Table, printer.Wide:
		_, err = fmt.Fprintln(w)
	case printer.YAML:
		_, err = fmt.Fprintln(w, "---")
	}
	return err
}

// getNamed reads the named objects of kind in ns, in order; the names not
// found come back as errors, any other failure ends it.
func getNamed(ctx context.Context, c client.Interface, kind api.KindInfo, ns string, names []string) ([]*api.Object, []error, error) {
	var (
		objs    []*api.Object
		missing []error
	)
	for _, n := range names {
		o, err := c.Get(ctx, kind.Kind, ns, n)
		switch {
		case errors.Is(err, api.ErrNotFound):
			missing = append(missing, err)
		case err != nil:
			return nil, nil, err
		default:
			objs = append(objs, o)
		}
	}
	return objs, missing, nil
}

// listAll reads every object of kind in ns matching opts, in pages of
// opts.Limit, and returns them with the list's resource version.
func listAll(ctx context.Context, c client.Interface, kind api.KindInfo, ns string, opts api.ListOptions) ([]*api.Object, string, error) {
	var (
		items []*api.Object
		rv    string
	)
	for {
		l, err := c.List(ctx, kind.Kind, ns, opts)
		if err != nil {
			return nil, "", err
		}
		items = append(items, l.Items...)
		if rv == "" {
			rv = l.ResourceVersion
		}
		if l.Continue == "" {
			return items, rv, nil
		}
		opts.Continue = l.Continue
	}
}
