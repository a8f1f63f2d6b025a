// Package event is `cairn event create|cancel`: send an event to one
// project (or to every project subscribed to it) and cancel one.
package event

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

// createFlags holds the flags of `cairn event create`.
type createFlags struct {
	Project, Source, Type, Payload, Title string
	Labels, Qualifiers                    []string
}

// New returns the `event` command with its subcommands.
func New(s *session.Session) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "event",
		Short: "Create and cancel events",
		Long: "An Event is one occurrence for a project: its worker runs on the runtime (see docs/events.md).\n" +
			"List them with 'cairn get events', follow a worker with 'cairn logs event/NAME -f'.",
	}
	cmd.AddCommand(newCreate(s), newCancel(s), newList(s))
	return cmd
}

func newCreate(s *session.Session) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create --source S --type T [--project P] [--payload @file|TEXT]",
		Short: "Create an event for a project, or for every project subscribed to it",
		Long: "Create an event. With --project, one event for that project; without, one event for every\n" +
			"project of the namespace whose subscriptions match the source, type, qualifiers and labels\n" +
			"(possibly none). Each event's worker starts when capacity allows.",
		Example: "  cairn event create --project hello --source cli --type run\n" +
			"  cairn event create --source github --type push --payload @push.json --label branch=main",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return create(cmd.Context(), s, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Project, "project", "", "the project (default: every subscribed project)")
	fl.StringVar(&f.Source, "source", "", "the event's source (required)")
	fl.StringVar(&f.Type, "type", "", "the event's type (required)")
	fl.StringVar(&f.Payload, "payload", "", "the payload: text, or @FILE to read it from a file")
	fl.StringVar(&f.Title, "title", "", "a short title")
	fl.StringSliceVarP(&f.Labels, "label", "l", nil, "a label k=v (repeatable)")
	fl.StringSliceVar(&f.Qualifiers, "qualifier", nil, "a qualifier k=v (repeatable)")
	return cmd
}

func pairs(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

func create(ctx context.Context, s *session.Session, f *createFlags) error {
	if f.Source == "" || f.Type == "" {
		return fmt.Errorf("--source and --type are required")
	}
	payload := f.Payload
	if file, ok := strings.CutPrefix(payload, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--payload: %w", err)
		}
		payload = string(b)
	}
	labels, err := pairs("label", f.Labels)
	if err != nil {
		return err
	}
	quals, err := pairs("qualifier", f.Qualifiers)
	if err != nil {
		return err
	}
	c, err := s.Client()
	if err != nil {
		return err
	}
	ev := &api.Event{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: s.Namespace},
		Spec: api.EventSpec{Project: f.Project, Source: f.Source, Type: f.Type, Payload: payload, ShortTitle: f.Title,
			Labels: labels, Qualifiers: quals}}
	obj, err := api.FromResource(ev)
	if err != nil {
		return err
	}
	out, err := c.Create(ctx, obj)
	if err != nil {
		if why := missingTarget(ctx, c, s.Namespace, f.Project); why != nil {
			return why
		}
		return err
	}
	names := []string{out.Name}
	if out.Kind == api.KindEvent+"List" {
		var l struct {
			Items []struct {
				Metadata api.ObjectMeta `json:"metadata"`
			} `json:"items"`
		}
		names = nil
		raw, err := json.Marshal(out)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("the server's answer is not an EventList: %w", err)
		}
		for _, m := range l.Items {
			names = append(names, m.Metadata.Name)
		}
		if len(names) == 0 {
			if why := missingTarget(ctx, c, s.Namespace, ""); why != nil {
				return why
			}
			_, err := fmt.Fprintln(s.Streams.Out, "no project is subscribed to this event")
			return err
		}
	}
	for _, n := range names {
		if _, err := fmt.Fprintf(s.Streams.Out, "event/%s created\n", n); err != nil {
			return err
		}
	}
	return nil
}

func newCancel(s *session.Session) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel an event: a PENDING one is CANCELED, a running one ABORTED with its jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.Client()
			if err != nil {
				return err
			}
			b, err := c.Action(cmd.Context(), client.ActionRequest{Kind: api.KindEvent, Namespace: s.Namespace, Name: args[0], Action: "cancel"})
			if err != nil {
				return err
			}
			var ev api.Event
			if err := json.Unmarshal(b, &ev); err != nil {
				return fmt.Errorf("the server's answer is not an Event: %w", err)
			}
			_, err = fmt.Fprintf(s.Streams.Out, "event/%s %s\n", ev.Name, strings.ToLower(string(ev.Status.Worker.Phase)))
			return err
		},
	}
}

// listFlags holds the flags of `cairn event list`.
type listFlags struct {
	Project, Source, Type, Phases, Selector, Output string
}

func newList(s *session.Session) *cobra.Command {
	f := &listFlags{}
	cmd := &cobra.Command{
		Use:     "list [--project P] [--source S] [--type T] [--phase A,B] [-l SELECTOR]",
		Short:   "List the events that match a project, source, type, worker phases and labels",
		Example: "  cairn event list --project hello --phase PENDING,RUNNING",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := printer.ParseFormat(f.Output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			kind, c, err := s.KindClient(ctx, api.KindEvent)
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"project": f.Project, "source": f.Source, "type": f.Type, "phases": f.Phases, "labelSelector": f.Selector} {
				if v != "" {
					q.Set(k, v)
				}
			}
			b, err := c.Action(ctx, client.ActionRequest{Method: "GET", Kind: api.KindEvent, Namespace: s.Namespace, Action: "search", Query: q})
			if err != nil {
				return err
			}
			var l api.List
			if err := json.Unmarshal(b, &l); err != nil {
				return fmt.Errorf("the server's answer is not an EventList: %w", err)
			}
			if len(l.Items) == 0 && format == printer.Table {
				_, err := fmt.Fprintln(s.Streams.ErrOut, "No events found.")
				return err
			}
			return printer.New(s.Streams.Out, kind, printer.Options{Format: format}).PrintList(l.Items)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Project, "project", "", "only this project's events")
	fl.StringVar(&f.Source, "source", "", "only events of this source")
	fl.StringVar(&f.Type, "type", "", "only events of this type")
	fl.StringVar(&f.Phases, "phase", "", "only events whose worker is in one of these phases (comma-separated)")
	fl.StringVarP(&f.Selector, "selector", "l", "", "a label selector")
	fl.StringVarP(&f.Output, "output", "o", "", "the output format: "+strings.Join(printer.Formats(), ", "))
	return cmd
}
