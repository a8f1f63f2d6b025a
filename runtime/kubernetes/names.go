package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Labels and annotations on a unit's Pod and Secret.
const (
	// LabelUnit holds Name(id): every object of a unit carries it.
	LabelUnit = "cairn.dev/unit"
	// LabelOwnerKind and LabelOwner name what the unit runs for (an Event
	// or a DeployItem, LabelOwner "namespace.name", shortened like Name).
	LabelOwnerKind = "cairn.dev/owner-kind"
	LabelOwner     = "cairn.dev/owner"
	// LabelManagedBy marks the objects as cairn's.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// AnnotationID holds the unit's full ID (Name may shorten it).
	AnnotationID = "cairn.dev/unit-id"
	// AnnotationClaim, on a worker's Secret, names the workspace claim it
	// shares with its jobs, deleted with the worker's pod.
	AnnotationClaim = "cairn.dev/workspace-claim"
	// The final state, written on the Secret once the unit has ended.
	AnnotationPhase    = "cairn.dev/phase"
	AnnotationExitCode = "cairn.dev/exit-code"
	AnnotationReason   = "cairn.dev/reason"
	AnnotationStarted  = "cairn.dev/started"
	AnnotationEnded    = "cairn.dev/ended"
)

// maxName is the longest name Name returns: a label value's limit, which
// also keeps pod names valid as host names.
const maxName = 63

// Name returns the name of a unit's Pod and Secret (and the value of its
// LabelUnit): the ID itself when it is a valid DNS label, otherwise the ID
// with every other character replaced by '-', shortened, and followed by
// a hash of the ID, so that two IDs never share a name. The same ID always
// gives the same name, which is how a repeated start finds the unit.
func Name(id string) string {
	return shorten(id, false)
}

// labelValue makes s a valid label value the way Name does, keeping '.'.
func labelValue(s string) string {
	return shorten(s, true)
}

func shorten(s string, dots bool) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', dots && c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if out == s && len(out) <= maxName && out != "" && alnum(out[0]) && alnum(out[len(out)-1]) {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:12]
	out = strings.Trim(out, "-.")
	if len(out) > maxName-len(h)-1 {
		out = strings.TrimRight(out[:maxName-len(h)-1], "-.")
	}
	if out == "" {
		return "u-" + h
	}
	return out + "-" + h
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
