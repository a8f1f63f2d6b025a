package kinds

import (
	"strings"
	"unicode"
)

// maxEventValue bounds a value of an event's qualifiers and labels: a Git
// ref name (a branch) may be 255 bytes long.
const maxEventValue = 255

// eventValue says what is wrong with v as a value of an event's (or a
// subscription's) qualifiers or labels, or "" when nothing is. Unlike
// metadata labels, these are matched by equality only, never by a
// selector, so they hold what the outside world names things with: a
// repository "owner/name", a branch "feature/x", a GitHub label "needs
// review". They must be printable, at most 255 bytes, without leading or
// trailing spaces.
func eventValue(v string) string {
	switch {
	case len(v) > maxEventValue:
		return "must be no more than 255 bytes"
	case strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }):
		return "must be printable: no control characters, tabs or line breaks"
	case strings.TrimSpace(v) != v:
		return "must not begin or end with spaces"
	}
	return ""
}
