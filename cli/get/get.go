// Package get is `cairn get KIND [NAME...]`: it lists or reads objects and
// prints them as a table (the kind's printer columns), names, YAML or JSON,
// and with -w keeps printing a row per change.
package get

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/cli/tree"
	"cairn.dev/cairn/client"
)

// flagpole holds the flags of `cairn get`.
type flagpole struct {
	Output        string
	AllNamespaces bool
	Selector      string
	Watch         bool
	WatchEvents   bool
	ShowLabels    bool
	NoHeaders     bool
	ChunkSize     int64
	Tree          bool
}

// New returns the `get` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "get KIND[,KIND...] [NAME...] | KIND/NAME...",
		Short: "List objects or show some by name",
		Long: "Get prints objects. KIND is the kind, its plural or a short name, in any case.\n" +
			"Without names it lists the namespace (-n) or every namespace (-A), optionally filtered by -l.\n" +
			"Several kinds, comma-separated or as KIND/NAME arguments, print one table each (no -w).\n" +
			"Secret values only appear in the YAML or JSON of a single Secret asked for by name.",
		Example: "  cairn get installations -A\n  cairn get secret db -o yaml\n  cairn get events -l app=web -w\n" +
			"  cairn get installations,executions,deployitems\n  cairn get secret/db cleaner/preview",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			targets, err := parseTargets(args)
			if err != nil {
				return err
			}
			if len(targets) == 1 {
				return run(cmd.Context(), s, flags, targets[0].kind, targets[0].names)
			}
			return runMany(cmd.Context(), s, flags, targets)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&flags.Output, "output", "o", "", "output format: wide, yaml, json or name")
	f.BoolVarP(&flags.AllNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVarP(&flags.Selector, "selector", "l", "", "label selector: k=v,k!=v,k in (a,b),k,!k")
	f.BoolVarP(&flags.Watch, "watch", "w", false, "after printing, watch for changes and print each")
	f.BoolVar(&flags.WatchEvents, "output-watch-events", false, "with -w, add an EVENT column: ADDED, MODIFIED or DELETED")
	f.BoolVar(&flags.ShowLabels, "show-labels", false, "add a LABELS column")
	f.BoolVar(&flags.NoHeaders, "no-headers", false, "leave out the table header")
	f.BoolVar(&flags.Tree, "tree", false, "for installations named: print each as a tree of its nested installations, execution and deploy items")
	f.Int64Var(&flags.ChunkSize, "chunk-size", 500, "read lists in pages of this many objects (limit and continue), so that no response is huge (0: pages of 500, the client's default)")
	return cmd
}

func run(ctx context.Context, s *session.Session, flags *flagpole, kindName string, names []string) error {
	format, err := printer.ParseFormat(flags.Output)
	if err != nil {
		return err
	}
	if len(names) > 0 && (flags.AllNamespaces || flags.Selector != "") {
		return fmt.Errorf("names cannot be combined with -A or -l")
	}
	if flags.ChunkSize < 0 {
		return fmt.Errorf("--chunk-size must not be negative, got %d", flags.ChunkSize)
	}
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	ns := s.NamespaceFor(kind, "")
	if flags.AllNamespaces {
		ns = ""
	}
	if flags.Tree {
		if kind.Kind != api.KindInstallation || len(names) == 0 || flags.Watch {
			return fmt.Errorf("--tree needs installations named, without -w")
		}
		for _, n := range names {
			if err := tree.Print(ctx, c, s.Streams.Out, ns, n); err != nil {
				return err
			}
		}
		return nil
	}
	if flags.WatchEvents && !flags.Watch {
		return fmt.Errorf("--output-watch-events needs -w")
	}
	p := printer.New(s.Streams.Out, kind, printer.Options{
		Format: format, AllNamespaces: flags.AllNamespaces && kind.Namespaced,
		ShowLabels: flags.ShowLabels, NoHeaders: flags.NoHeaders, WatchEvents: flags.WatchEvents,
	})
	var rv string
	if len(names) > 0 {
		rv, err = byName(ctx, c, p, kind, ns, names)
	} else {
		rv, err = list(ctx, s, c, p, kind, ns, flags)
	}
	if err != nil || !flags.Watch {
		return err
	}
	return Follow(ctx, c, p, kind, ns, api.ListOptions{LabelSelector: flags.Selector, ResourceVersion: rv}, names)
}

// byName prints the named objects and returns the version to watch from.
// A single object prints in full; missing ones are reported together after
// the others are printed.
func byName(ctx context.Context, c client.Interface, p *printer.Printer, kind api.KindInfo, ns string, names []string) (string, error) {
	objs, missing, err := getNamed(ctx, c, kind, ns, names)
	if err != nil {
		return "", err
	}
	if len(objs) == 0 {
		return "", errors.Join(missing...) // no empty List before the error
	}
	if len(names) == 1 && len(objs) == 1 {
		err = p.PrintObject(objs[0])
	} else {
		err = p.PrintList(objs)
	}
	if err != nil {
		return "", err
	}
	rv := "" // several objects: Follow starts from the collection's version
	if len(objs) == 1 {
		rv = objs[0].ResourceVersion
	}
	return rv, errors.Join(missing...)
}

// list prints every object of the kind in ns, read in pages of
// --chunk-size (all read first, so the table lines up), and returns the
// list's resource version.
func list(ctx context.Context, s *session.Session, c client.Interface, p *printer.Printer, kind api.KindInfo, ns string, flags *flagpole) (string, error) {
	items, rv, err := listAll(ctx, c, kind, ns, api.ListOptions{LabelSelector: flags.Selector, Limit: flags.ChunkSize})
	if err != nil {
		return "", err
	}
	if len(items) == 0 && !flags.Watch {
		where := ""
		if kind.Namespaced && ns != "" {
			where = " in the namespace " + ns
		}
		_, err := fmt.Fprintf(s.Streams.ErrOut, "No %s found%s.\n", printer.Escape(kind.Plural), printer.Escape(where))
		return rv, err
	}
	return rv, p.PrintList(items)
}

// Follow watches kind in ns from opts.ResourceVersion and prints every
// change (only those of names, when given) until ctx is done, which ends
// it without error. A deletion prints the object's last row; an event that
// would print the same row as the object's last one (a change no column
// shows) prints nothing. A stream the server closes or a broken connection is
// resumed from the last version seen; a version compacted away is an error.
func Follow(ctx context.Context, c client.Interface, p *printer.Printer, kind api.KindInfo, ns string, opts api.ListOptions, names []string) error {
	if opts.ResourceVersion == "" {
		// Nothing printed yet to resume from: start at the current version
		// of the collection, without replaying the current objects.
		l, err := c.List(ctx, kind.Kind, ns, api.ListOptions{LabelSelector: opts.LabelSelector, Limit: 1})
		if err != nil {
			return err
		}
		opts.ResourceVersion = l.ResourceVersion
	}
	for {
		w, err := c.Watch(ctx, kind.Kind, ns, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !session.Resumable(err) {
				return err
			}
			if session.Pause(ctx, session.ResumeDelay) != nil {
				return nil
			}
			continue
		}
		for ev := range w.Events() {
			if ev.Object == nil {
				continue
			}
			if ev.Object.ResourceVersion != "" {
				opts.ResourceVersion = ev.Object.ResourceVersion
			}
			if ev.Type == api.Bookmark || ev.Type == api.Error ||
				(len(names) > 0 && !slices.Contains(names, ev.Object.Name)) {
				continue
			}
			if err := p.PrintEvent(string(ev.Type), ev.Object); err != nil {
				w.Stop()
				return err
			}
		}
		err = w.Err()
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if !session.Resumable(err) {
			return err
		}
		if err != nil && session.Pause(ctx, session.ResumeDelay) != nil {
			return nil
		}
	}
}
