package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// EventName is the name of the Event a delivery creates for project: the
// project's name (cut to 40 bytes) and 16 hex digits of a hash of the
// Gateway (namespace and name), the delivery's identity and the project.
// The same delivery always gets the same names, so one received twice —
// GitHub's redelivery, a sender's retry, a restart between — creates its
// Events once: the second fan-out finds them (AlreadyExists).
func EventName(namespace, gateway, delivery, project string) string {
	h := sha256.New()
	for _, s := range []string{namespace, gateway, delivery, project} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	prefix := strings.TrimRight(project[:min(len(project), 40)], "-.")
	return prefix + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}
