// Package apply is `cairn apply -f FILE|DIR|-`: it creates each object of
// the manifests or, when it exists, replaces it with the manifest's
// version, and prints `kind/name created|configured|unchanged`.
//
// Replacing keeps what others manage on the object: its status, its
// finalizers and owner references unless the manifest lists some, and
// annotations the manifest does not mention (controllers record their work
// there). Labels and every other field are the manifest's.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/manifest"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/conflict"
)

// flagpole holds the flags of `cairn apply`.
type flagpole struct {
	Filenames []string
}

// New returns the `apply` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update objects from YAML or JSON manifests",
		Long: "Apply creates every object of the manifests, or updates it when it exists.\n" +
			"-f takes a file, a directory (its *.yaml, *.yml and *.json files in name order) or - for standard input;\n" +
			"files may hold several YAML documents separated by ---. Objects without a namespace go to -n.\n" +
			"Nothing is applied when a manifest does not parse.",
		Example: "  cairn apply -f examples/demo.yaml\n  cat app.yaml | cairn apply -f -",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, flags)
		},
	}
	cmd.Flags().StringSliceVarP(&flags.Filenames, "filename", "f", nil, "a manifest file, a directory of them, or - for standard input (repeatable)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func run(ctx context.Context, s *session.Session, flags *flagpole) error {
	var objs []manifest.Object
	for _, f := range flags.Filenames {
		o, err := manifest.Read(f, s.Streams.In)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		return fmt.Errorf("no objects found in %v", flags.Filenames)
	}
	return Apply(ctx, s, objs)
}

// Result is what applying one object did.
type Result string

// The results printed after each object.
const (
	Created    Result = "created"
	Configured Result = "configured"
	Unchanged  Result = "unchanged"
)

// Apply applies objs in order, printing one line per object to the
// session's output. It goes on after an object fails and returns every
// failure joined, each prefixed with the object's file and line; it stops
// at once when the server cannot be reached or rejects the token. It
// blocks on one request at a time.
func Apply(ctx context.Context, s *session.Session, objs []manifest.Object) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	kinds, err := s.Kinds(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range objs {
		kind, ok := api.ResolveKind(kinds, m.Kind)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %w", m.Where(), session.UnknownKind(kinds, m.Kind)))
			continue
		}
		obj := m.DeepCopy()
		obj.Kind = kind.Kind
		obj.Namespace = s.NamespaceFor(kind, obj.Namespace)
		res, out, err := One(ctx, c, obj)
		if err != nil {
			if errors.Is(err, client.ErrUnreachable) || errors.Is(err, api.ErrUnauthorized) {
				return err
			}
			ref := printer.ObjectName(kind.Kind, obj.Name)
			if obj.Name == "" {
				ref = printer.ObjectName(kind.Kind, obj.GenerateName+"*")
			}
			errs = append(errs, session.Explain(fmt.Errorf("%s: %s: %w", m.WhereError(err), ref, err)))
			continue
		}
		if _, err := fmt.Fprintf(s.Streams.Out, "%s %s\n", printer.ObjectName(out.Kind, out.Name), res); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// One applies a single object whose kind and namespace are final: it
// creates it, or replaces the stored object (keeping its resourceVersion),
// reading and trying again (conflict.RetryIf's pace) when another writer
// wins the race. It returns what it did and the object as stored. Errors
// are the API's: Invalid with field errors, NotFound for a missing
// namespace, Forbidden, Conflict after the retries, and an error for an
// object being deleted.
func One(ctx context.Context, c client.Interface, obj *api.Object) (Result, *api.Object, error) {
	if obj.Name == "" {
		out, err := c.Create(ctx, obj)
		return Created, out, err
	}
	var res Result
	var out *api.Object
	lostRace := func(err error) bool {
		// AlreadyExists: created meanwhile, so update it.
		return conflict.Is(err) || errors.Is(err, api.ErrAlreadyExists)
	}
	err := conflict.RetryIf(ctx, lostRace, func() (err error) {
		res, out, err = once(ctx, c, obj)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return res, out, nil
}

// once is one attempt of One: it reads the stored object and creates or
// replaces it. It returns the API's errors as they are.
func once(ctx context.Context, c client.Interface, obj *api.Object) (Result, *api.Object, error) {
	cur, err := c.Get(ctx, obj.Kind, obj.Namespace, obj.Name)
	if errors.Is(err, api.ErrNotFound) {
		out, err := c.Create(ctx, obj)
		return Created, out, err
	}
	if err != nil {
		return "", nil, err
	}
	if cur.Deleting() {
		return "", nil, fmt.Errorf("it is being deleted; wait until it is gone "+
			"(cairn wait %s %s --for delete) and apply again", obj.Kind, obj.Name)
	}
	want := merge(obj, cur)
	if same(want, cur) {
		return Unchanged, cur, nil
	}
	out, err := c.Update(ctx, want)
	if err != nil {
		return "", nil, err
	}
	if same(out, cur) {
		return Unchanged, out, nil
	}
	return Configured, out, nil
}

// merge builds the replacement of cur from the manifest's desired object.
func merge(desired, cur *api.Object) *api.Object {
	out := desired.DeepCopy()
	out.UID = cur.UID
	out.ResourceVersion = cur.ResourceVersion
	out.Generation = cur.Generation
	out.CreationTimestamp = cur.CreationTimestamp
	out.DeletionTimestamp = cur.DeletionTimestamp
	out.GenerateName = cur.GenerateName
	if out.ManagedFields == nil {
		out.ManagedFields = cur.ManagedFields // the server records them: a manifest names none
	}
	if out.Finalizers == nil {
		out.Finalizers = cur.Finalizers
	}
	if out.OwnerReferences == nil {
		out.OwnerReferences = cur.OwnerReferences
	}
	if len(cur.Annotations) > 0 {
		ann := maps.Clone(cur.Annotations)
		maps.Copy(ann, desired.Annotations)
		out.Annotations = ann
	}
	out.SetField(api.FieldStatus, cur.Field(api.FieldStatus))
	return out
}

// same reports whether a and b are equal but for their resourceVersion,
// comparing JSON values (not bytes: key order may differ).
func same(a, b *api.Object) bool {
	norm := func(o *api.Object) any {
		c := o.DeepCopy()
		c.ResourceVersion = ""
		raw, err := json.Marshal(c)
		if err != nil {
			return nil
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil
		}
		return v
	}
	na, nb := norm(a), norm(b)
	return na != nil && reflect.DeepEqual(na, nb)
}
