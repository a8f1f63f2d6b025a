// Package patch is `cairn patch`, `cairn label` and `cairn annotate`: they
// change one object in place with a JSON merge patch, as their kubectl
// namesakes do, and print `kind/name patched` (`labeled`, `annotated`), or
// `(no change)` when the object already was so.
package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
)

// New returns the `patch` command.
func New(s *session.Session) *cobra.Command {
	var (
		body, typ, subresource string
	)
	cmd := &cobra.Command{
		Use:   "patch KIND NAME -p PATCH",
		Short: "Change fields of one object with a JSON merge patch",
		Long: "Patch merges PATCH (JSON or YAML) into the object: objects merge key by key, a null\n" +
			"removes a key, anything else replaces what was there. --subresource status patches the\n" +
			"status (controllers own it: what you write may be overwritten at their next reconcile).",
		Example: "  cairn patch installation preview-42 -p '{\"spec\":{\"automaticReconcile\":{\"failedReconcile\":{}}}}'\n" +
			"  cairn patch secret db -p 'metadata: {labels: {tier: data}}'",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if typ != "merge" {
				return fmt.Errorf("--type %q: cairn patch makes JSON merge patches (--type merge); for json or strategic patches use kubectl", typ)
			}
			if subresource != "" && subresource != "status" {
				return fmt.Errorf("--subresource %q: the only subresource that can be patched is status", subresource)
			}
			if body == "" {
				return fmt.Errorf("give the patch with -p, e.g. -p '{\"metadata\":{\"labels\":{\"tier\":\"data\"}}}'")
			}
			raw, err := yaml.YAMLToJSON([]byte(body))
			if err != nil {
				return fmt.Errorf("-p is neither JSON nor YAML: %v", err)
			}
			if !strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
				return fmt.Errorf("-p must be an object, e.g. -p '{\"spec\":{...}}'")
			}
			return change(cmd.Context(), s, args[0], args[1], "patched", subresource == "status",
				func(*api.Object) ([]byte, error) { return raw, nil })
		},
	}
	f := cmd.Flags()
	f.StringVarP(&body, "patch", "p", "", "the patch, JSON or YAML")
	f.StringVar(&typ, "type", "merge", "the kind of patch: merge (the only one cairn's CLI makes)")
	f.StringVar(&subresource, "subresource", "", "status to patch the status instead of the object")
	return cmd
}

// NewLabel returns the `label` command.
func NewLabel(s *session.Session) *cobra.Command {
	return metadataCommand(s, "label", "labels", "labeled",
		"  cairn label installation preview-42 stage=review\n  cairn label installation preview-42 stage=done --overwrite\n"+
			"  cairn label installation preview-42 stage-")
}

// NewAnnotate returns the `annotate` command.
func NewAnnotate(s *session.Session) *cobra.Command {
	return metadataCommand(s, "annotate", "annotations", "annotated",
		"  cairn annotate secret db owner='team data'\n  cairn annotate secret db owner-")
}

// metadataCommand is `label` or `annotate`: it sets and removes keys of
// the object's metadata.<field>.
func metadataCommand(s *session.Session, use, field, done, example string) *cobra.Command {
	var overwrite bool
	cmd := &cobra.Command{
		Use:   use + " KIND NAME KEY=VALUE... [KEY-]...",
		Short: "Set or remove the " + field + " of one object",
		Long: "KEY=VALUE sets a key; KEY- removes it. Changing the value of a key already set needs\n" +
			"--overwrite, as with kubectl. The change is made on the version read (a concurrent change\n" +
			"makes it fail with a conflict: run it again).",
		Example: example,
		Args:    cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, remove, err := parseChanges(args[2:])
			if err != nil {
				return err
			}
			verb := done
			if use == "label" && len(set) == 0 {
				verb = "unlabeled" // only removals, as kubectl says
			}
			return change(cmd.Context(), s, args[0], args[1], verb, false, func(cur *api.Object) ([]byte, error) {
				return metadataPatch(cur, field, set, remove, overwrite)
			})
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "allow changing the value of a key already set")
	return cmd
}

// errNoChange is what a patch function returns when the object already is
// as asked.
var errNoChange = errors.New("no change")

// change reads the object KIND/NAME, asks patchFor for the merge patch to
// make of it, makes it and prints the outcome with done.
func change(ctx context.Context, s *session.Session, kindName, name, done string, status bool, patchFor func(*api.Object) ([]byte, error)) error {
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	ns := s.NamespaceFor(kind, "")
	cur, err := c.Get(ctx, kind.Kind, ns, name)
	if err != nil {
		return err
	}
	ref := printer.ObjectName(kind.Kind, name)
	raw, err := patchFor(cur)
	if errors.Is(err, errNoChange) {
		_, err = fmt.Fprintf(s.Streams.Out, "%s %s (no change)\n", ref, done)
		return err
	}
	if err != nil {
		return err
	}
	out, err := c.Patch(ctx, kind.Kind, ns, name, raw, status)
	if err != nil {
		return err
	}
	if out.ResourceVersion == cur.ResourceVersion {
		done += " (no change)"
	}
	_, err = fmt.Fprintf(s.Streams.Out, "%s %s\n", ref, done)
	return err
}

// parseChanges reads KEY=VALUE (set) and KEY- (remove) arguments.
func parseChanges(args []string) (set map[string]string, remove []string, err error) {
	set = map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			if k == "" {
				return nil, nil, fmt.Errorf("%q: the key before = is empty", a)
			}
			if _, dup := set[k]; dup {
				return nil, nil, fmt.Errorf("%q: the key %s is set twice", a, k)
			}
			set[k] = v
			continue
		}
		if k, ok := strings.CutSuffix(a, "-"); ok && k != "" {
			remove = append(remove, k)
			continue
		}
		return nil, nil, fmt.Errorf("%q: write KEY=VALUE to set a key, or KEY- to remove it", a)
	}
	for _, k := range remove {
		if _, ok := set[k]; ok {
			return nil, nil, fmt.Errorf("the key %s is both set and removed", k)
		}
	}
	return set, remove, nil
}

// metadataPatch is the merge patch that sets set and removes remove in
// cur's metadata.<field> (labels or annotations), on cur's version.
// Changing a key's value needs overwrite. errNoChange when cur has them
// already.
func metadataPatch(cur *api.Object, field string, set map[string]string, remove []string, overwrite bool) ([]byte, error) {
	have := cur.Labels
	if field == "annotations" {
		have = cur.Annotations
	}
	changes := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		old, ok := have[k]
		switch {
		case ok && old == set[k]:
			continue
		case ok && !overwrite:
			return nil, fmt.Errorf("the %s %s is already %q: add --overwrite to change it", strings.TrimSuffix(field, "s"), k, old)
		}
		changes[k] = set[k]
	}
	for _, k := range remove {
		if _, ok := have[k]; ok {
			changes[k] = nil
		}
	}
	if len(changes) == 0 {
		return nil, errNoChange
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		field:             changes,
		"resourceVersion": cur.ResourceVersion,
	}})
}
