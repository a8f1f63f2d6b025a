package session_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/session"
)

// TestExplain_ErrorMessagesQuotingTheServerAreEscaped: whatever text an
// error carries from the server (a message, an Invalid error's kind, field
// and causes), the message the CLI prints holds no terminal control; the
// newlines that separate joined errors or causes stay.
func TestExplain_ErrorMessagesQuotingTheServerAreEscaped(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e\nnext"
	invalid := api.NewInvalid("Kind"+evil, "name", field.ErrorList{field.Invalid(field.NewPath("spec", "x"+evil), "v", "bad"+evil)})
	cases := []struct {
		name  string
		err   error
		lines int // lines the message must have
	}{
		{"a server message", api.NewBadRequest("bad %s", evil), 1},
		{"a wrapped server message", fmt.Errorf("cannot read the trace: %w", api.NewBadRequest("bad %s", evil)), 1},
		{"joined errors", errors.Join(api.NewStatus(api.ReasonNotFound, "a%s", evil), api.NewStatus(api.ReasonNotFound, "b")), 2},
		{"an Invalid error with causes", invalid, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := session.Explain(tc.err)
			msg := got.Error()
			if strings.ContainsAny(msg, "\x1b\x07\u009b\u202e") || !strings.Contains(msg, `\x1b`) {
				t.Errorf("the message is not escaped: %q", msg)
			}
			if n := strings.Count(msg, "\n") + 1; n < tc.lines || (tc.lines == 1 && n != 1) {
				t.Errorf("the message has %d lines, want %d: %q", n, tc.lines, msg)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("the explained error no longer matches the original")
			}
		})
	}
}
