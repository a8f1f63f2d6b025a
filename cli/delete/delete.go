// Package delete is `cairn delete KIND NAME... | -f FILE`: it deletes
// objects and prints `kind/name deleted` for objects gone at once, or
// `kind/name marked for deletion` for objects whose finalizers still have
// work to do; --wait blocks until those are gone too.
package delete

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/manifest"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/cli/wait"
	"cairn.dev/cairn/client"
)

// flagpole holds the flags of `cairn delete`.
type flagpole struct {
	Filenames      []string
	Wait           bool
	Timeout        time.Duration
	Force          bool
	IgnoreNotFound bool
	Cascade        string
	DryRun         string
}

// propagation maps --cascade to a propagation policy, as kubectl does.
var propagation = map[string]string{
	"foreground": api.PropagationForeground, "background": api.PropagationBackground, "orphan": api.PropagationOrphan,
}

// New returns the `delete` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "delete KIND NAME... | -f FILE",
		Short: "Delete objects by name or from manifests",
		Long: "Delete marks objects for deletion. An object whose finalizers are done goes at once (deleted);\n" +
			"others stay readable until the garbage collector and controllers finish (marked for deletion).\n" +
			"--wait blocks until they are gone. --force (admins only) drops every finalizer and removes the\n" +
			"object at once: the escape hatch for a stuck deletion. --cascade chooses what becomes of the\n" +
			"objects' dependents: foreground (the default: they go first), background (the object goes at\n" +
			"once, they after) or orphan (they stay, without their reference to it). --dry-run shows, from the\n" +
			"garbage collector's graph, everything the deletion would take (a tree, counts per kind), the\n" +
			"protected objects that would block it and the dependents it would only detach, and deletes\n" +
			"nothing; --dry-run=server has the server check the deletion itself (authorization, protection)\n" +
			"and write nothing, as kubectl's does.",
		Example: "  cairn delete installation preview-42 --wait\n  cairn delete -f examples/demo.yaml\n" +
			"  cairn delete installation/preview-42 --dry-run\n" +
			"  cairn delete secret stuck --force\n  cairn delete installation preview-42 --cascade=orphan --dry-run=server",
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), s, flags, args)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&flags.Filenames, "filename", "f", nil, "delete the objects of a manifest file, directory, or - for standard input")
	f.BoolVar(&flags.Wait, "wait", false, "wait until the objects are gone")
	f.DurationVar(&flags.Timeout, "timeout", 60*time.Second, "with --wait, how long to wait; 0 waits forever")
	f.BoolVar(&flags.Force, "force", false, "drop all finalizers and delete at once (admin only)")
	f.BoolVar(&flags.IgnoreNotFound, "ignore-not-found", false, "treat objects that do not exist as deleted")
	f.StringVar(&flags.Cascade, "cascade", "foreground", "what becomes of the dependents: foreground, background or orphan")
	f.StringVar(&flags.DryRun, "dry-run", "none", "client (or bare --dry-run): show what the deletion would take, and delete nothing; "+
		"server: check the deletion on the server and write nothing; none: delete")
	f.Lookup("dry-run").NoOptDefVal = dryRunClient
	return cmd
}

// target is one object to delete.
type target struct {
	kind  api.KindInfo
	ns    string
	name  string
	where string // manifest position, if any
}

func run(ctx context.Context, s *session.Session, flags *flagpole, args []string) error {
	if flags.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	if _, ok := propagation[flags.Cascade]; !ok {
		return fmt.Errorf("--cascade %q: use foreground, background or orphan", flags.Cascade)
	}
	if flags.DryRun != "none" && flags.DryRun != "server" && flags.DryRun != dryRunClient {
		return fmt.Errorf("--dry-run %q: use client (what the deletion would take), server or none", flags.DryRun)
	}
	if flags.DryRun != "none" && flags.Wait {
		return fmt.Errorf("--wait and --dry-run cannot go together: a dry run deletes nothing to wait for")
	}
	var targets []target
	switch {
	case len(flags.Filenames) > 0 && len(args) > 0:
		return fmt.Errorf("give either KIND NAME... or -f, not both")
	case len(flags.Filenames) > 0:
		t, err := fromManifests(ctx, s, flags.Filenames)
		if err != nil {
			return err
		}
		targets = t
	case len(args) >= 1 && strings.Contains(args[0], "/"):
		t, err := fromRefs(ctx, s, args)
		if err != nil {
			return err
		}
		targets = t
	case len(args) >= 2:
		kind, err := s.Kind(ctx, args[0])
		if err != nil {
			return err
		}
		for _, n := range args[1:] {
			targets = append(targets, target{kind: kind, ns: s.NamespaceFor(kind, ""), name: n})
		}
	default:
		return fmt.Errorf("name what to delete: cairn delete KIND NAME..., cairn delete KIND/NAME... or cairn delete -f FILE")
	}
	return deleteTargets(ctx, s, targets, flags)
}

// fromRefs reads KIND/NAME arguments; every one must be of that form.
func fromRefs(ctx context.Context, s *session.Session, args []string) ([]target, error) {
	var out []target
	for _, a := range args {
		kindName, name, ok := strings.Cut(a, "/")
		if !ok || kindName == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q is not KIND/NAME: give either KIND NAME... or KIND/NAME...", a)
		}
		kind, err := s.Kind(ctx, kindName)
		if err != nil {
			return nil, err
		}
		out = append(out, target{kind: kind, ns: s.NamespaceFor(kind, ""), name: name})
	}
	return out, nil
}

// fromManifests reads the objects to delete from manifests; each must name
// its object.
func fromManifests(ctx context.Context, s *session.Session, files []string) ([]target, error) {
	kinds, err := s.Kinds(ctx)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, f := range files {
		objs, err := manifest.Read(f, s.Streams.In)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			kind, ok := api.ResolveKind(kinds, o.Kind)
			if !ok {
				return nil, fmt.Errorf("%s: %w", o.Where(), session.UnknownKind(kinds, o.Kind))
			}
			if o.Name == "" {
				return nil, fmt.Errorf("%s: %s has no metadata.name to delete", o.Where(), kind.Kind)
			}
			out = append(out, target{kind: kind, ns: s.NamespaceFor(kind, o.Namespace), name: o.Name, where: o.Where()})
		}
	}
	return out, nil
}

// deleteTargets deletes targets in order, printing a line for each, then with
// flags.Wait waits (within flags.Timeout overall) for those still present.
// It goes on after a failure and returns every failure joined; it stops at
// once when the server cannot be reached or rejects the token.
func deleteTargets(ctx context.Context, s *session.Session, targets []target, flags *flagpole) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	var (
		errs    []error
		pending []target
	)
	for _, t := range targets {
		ref := printer.ObjectName(t.kind.Kind, t.name)
		if flags.DryRun == dryRunClient {
			d, err := readDependents(ctx, c, t)
			switch {
			case errors.Is(err, api.ErrNotFound) && flags.IgnoreNotFound:
			case errors.Is(err, client.ErrUnreachable) || errors.Is(err, api.ErrUnauthorized):
				return err
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", ref, err))
			default:
				if err := writePreview(s.Streams.Out, d); err != nil {
					return err
				}
			}
			continue
		}
		prior := alreadyDeleting(ctx, c, t)
		_, gone, err := c.Delete(ctx, t.kind.Kind, t.ns, t.name, api.DeleteOptions{Force: flags.Force,
			PropagationPolicy: propagation[flags.Cascade], DryRun: flags.DryRun == "server"})
		switch {
		case errors.Is(err, api.ErrNotFound) && flags.IgnoreNotFound:
			continue
		case errors.Is(err, client.ErrUnreachable) || errors.Is(err, api.ErrUnauthorized):
			return err
		case err != nil:
			if t.where != "" {
				err = fmt.Errorf("%s: %w", t.where, err)
			}
			errs = append(errs, err)
			continue
		}
		msg := "deleted"
		if !gone {
			msg = "marked for deletion"
			pending = append(pending, t)
		}
		if flags.DryRun == "server" {
			msg += " (server dry run)"
		}
		line := ref + " " + msg
		if prior != nil && !gone {
			line = stillDeleting(ref, prior, time.Now())
		}
		if _, err := fmt.Fprintln(s.Streams.Out, line); err != nil {
			return err
		}
	}
	if flags.Wait {
		deadline := time.Now().Add(flags.Timeout)
		for _, t := range pending {
			timeout := time.Duration(0)
			if flags.Timeout > 0 {
				timeout = max(time.Until(deadline), time.Millisecond)
			}
			if _, err := wait.Until(ctx, c, t.kind, t.ns, t.name, wait.Deleted(), timeout); err != nil {
				var te *wait.TimeoutError
				if errors.As(err, &te) {
					te.Timeout = flags.Timeout // the whole wait, not what was left of it
				}
				errs = append(errs, err)
				continue
			}
			if _, err := fmt.Fprintf(s.Streams.Out, "%s deleted\n", printer.ObjectName(t.kind.Kind, t.name)); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}
