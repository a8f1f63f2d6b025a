package printer_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/store"
)

// evil holds what a hostile object could carry to drive a terminal: an
// OSC title change, a screen clear, a colour, a C1 CSI, a right-to-left
// override, DEL, a tab and a newline.
const evil = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u009b31m\u202eevil\x7f\ttab\nline"

// rawControl returns the first character of out a terminal could act on
// (a control other than the newlines of the layout, DEL, a C1 control, a
// bidirectional control, or a byte that is not UTF-8), or "" when none.
func rawControl(out string) string {
	for i, r := range out {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(out[i:]); n == 1 {
				return out[i : i+1]
			}
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return string(r)
		}
	}
	return ""
}

func TestEscape_WritesEveryTerminalControlVisibly(t *testing.T) {
	cases := []struct{ in, want, lines string }{
		{"plain text ✔️ é 日本", "plain text ✔️ é 日本", "plain text ✔️ é 日本"},
		{"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"a\nb\tc\rd\x00", `a\nb\tc\rd\x00`, "a\nb\\tc\\rd\\x00"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`, `csi\u009b31m`},
		{"rtl\u202egnp.exe \u2066iso\u2069", `rtl\u202egnp.exe \u2066iso\u2069`, `rtl\u202egnp.exe \u2066iso\u2069`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
	}
	for _, tc := range cases {
		if got := printer.Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := printer.EscapeLines(tc.in); got != tc.lines {
			t.Errorf("EscapeLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

// TestEscapeJSONAndToYAML_EscapeInTheFormatAndReadBackTheSame: JSON and
// YAML output carry no raw control, and decode to the same value.
func TestEscapeJSONAndToYAML_EscapeInTheFormatAndReadBackTheSame(t *testing.T) {
	for _, v := range []string{evil, "\u202e only bidi", "\u0085 next line \u009b"} {
		raw, err := json.Marshal(map[string]string{"k" + v: v})
		if err != nil {
			t.Fatal(err)
		}
		j := printer.EscapeJSON(raw)
		y, err := printer.ToYAML(raw)
		if err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string][]byte{"JSON": j, "YAML": y} {
			if c := rawControl(string(out)); c != "" {
				t.Errorf("%s of %q holds %q raw:\n%s", name, v, c, out)
			}
			var back map[string]string
			if err := yaml.Unmarshal(out, &back); err != nil || back["k"+v] != v {
				t.Errorf("%s of %q reads back as %q (%v):\n%s", name, v, back, err, out)
			}
		}
	}
}

// banner is a test kind whose printer columns show spec and status
// strings, one of them only with -o wide.
type banner struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           struct {
		Note string `json:"note,omitempty"`
	} `json:"spec,omitzero"`
	Status struct {
		Phase   string `json:"phase,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"status,omitzero"`
}

func bannerKind() registry.Kind {
	return registry.Define(registry.Spec[*banner]{
		Kind: "Banner", Namespaced: true,
		Columns: []api.Column{
			{Name: "NOTE", Path: ".spec.note"},
			{Name: "PHASE", Path: ".status.phase"},
			{Name: "MESSAGE", Path: ".status.message", Wide: true},
		},
	})
}

// fixedTraces serves one trace, full of terminal controls, for every object.
type fixedTraces struct{}

func (fixedTraces) Trace(kind, ns, name string) (*api.Trace, bool) {
	now := time.Now()
	tr := api.NewTrace(api.ObjectReference{Kind: kind, Namespace: ns, Name: name})
	tr.Reconciles = []api.TraceReconcile{{Controller: "ctl" + evil, Key: "key" + evil, Start: now, End: now,
		Result: "result" + evil, Error: "error" + evil,
		Steps: []api.TraceStep{{Type: api.StepExit, Message: "step" + evil}}}}
	return tr, true
}

func (fixedTraces) Leader(context.Context) (string, error) { return "", nil }

// TestCLI_NoControlCharacterFromTheServerReachesTheTerminal stores an
// object whose labels, annotations, spec and status strings hold terminal
// controls (the labels written past validation, as a hostile store would),
// then runs get (every format), describe, explain and a failing apply
// against the real server: no raw control reaches stdout or stderr, and
// the YAML and JSON read back to the stored values.
func TestCLI_NoControlCharacterFromTheServerReachesTheTerminal(t *testing.T) {
	srv := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), bannerKind())...),
		servertest.WithTraces(fixedTraces{}))
	ctx := identity.With(context.Background(), identity.System())
	b := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Banner"}}
	b.Namespace, b.Name = "default", "b"
	b.Annotations = map[string]string{"note": evil}
	b.SetField("spec", json.RawMessage(mustJSON(t, map[string]string{"note": evil})))
	out, err := srv.Registry.Create(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	out.SetField("status", json.RawMessage(mustJSON(t, map[string]string{"phase": evil, "message": evil})))
	if out, err = srv.Registry.UpdateStatus(ctx, out); err != nil {
		t.Fatal(err)
	}
	// Label values cannot hold controls through the API: put them in the
	// store directly.
	out.Labels = map[string]string{"app": evil}
	out.ResourceVersion = ""
	key := registry.KeyPrefix + "banners/default/b"
	if _, err := srv.Store.Txn(context.Background(), nil, store.Put(key, mustJSON(t, out))); err != nil {
		t.Fatal(err)
	}

	runs := []struct {
		args      []string
		stdin     string
		fails     bool
		roundTrip string // "json" or "yaml": the output decodes to the object
		clean     bool   // the output shows none of the hostile text
	}{
		{args: []string{"get", "banners"}},
		{args: []string{"get", "banners", "-o", "wide", "--show-labels"}},
		{args: []string{"get", "banners", "-A", "-o", "wide"}},
		{args: []string{"get", "banner", "b"}},
		{args: []string{"get", "banners", "-o", "name"}, clean: true},
		{args: []string{"get", "banner", "b", "-o", "yaml"}, roundTrip: "yaml"},
		{args: []string{"get", "banner", "b", "-o", "json"}, roundTrip: "json"},
		{args: []string{"get", "banners", "-o", "yaml"}},
		{args: []string{"get", "banners", "-o", "json"}},
		{args: []string{"describe", "banner", "b"}},
		{args: []string{"explain", "banner/b"}},
		{args: []string{"explain", "banner/b", "-o", "json"}},
		{args: []string{"explain", "banner/b", "-o", "yaml"}},
		{args: []string{"apply", "-f", "-"}, fails: true,
			stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Banner\nmetadata:\n  name: c\n  annotations: {\"bad\\e[2Jkey\": v}\n"},
	}
	for _, run := range runs {
		t.Run(strings.Join(run.args, " "), func(t *testing.T) {
			r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{Args: run.args, Stdin: run.stdin}, nil)
			if (r.Error != nil) != run.fails {
				t.Fatalf("error %v (want failure: %v): %s", r.Error, run.fails, r.Err)
			}
			for stream, text := range map[string]string{"stdout": r.Out, "stderr": r.Err} {
				if c := rawControl(text); c != "" {
					t.Errorf("%s holds %q raw:\n%s", stream, c, text)
				}
			}
			if !run.clean && !strings.Contains(r.Out+r.Err, `\x1b`) && !strings.Contains(r.Out+r.Err, `\u001b`) && !strings.Contains(r.Out+r.Err, `\e`) {
				t.Errorf("the escaped text is missing from the output:\n%s%s", r.Out, r.Err)
			}
			if run.roundTrip == "" {
				return
			}
			var back api.Object
			raw := []byte(r.Out)
			if run.roundTrip == "yaml" {
				if raw, err = yaml.YAMLToJSON(raw); err != nil {
					t.Fatalf("the YAML does not read back: %v\n%s", err, r.Out)
				}
			}
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("the output does not read back: %v\n%s", err, r.Out)
			}
			if back.Annotations["note"] != evil || back.Labels["app"] != evil || !strings.Contains(string(back.Field("spec")), `\u001b]0;pwned`) {
				t.Errorf("the output reads back as other values: %+v %s", back.ObjectMeta, back.Field("spec"))
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
