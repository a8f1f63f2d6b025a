package controller

import (
	"bytes"
	"encoding/json"

	"cairn.dev/cairn/api"
)

// StatusChanged is the one check of cairn's controllers that a status
// write would change something: it reports whether next, the status to
// write, differs from cur, the status held now, as the API stores them —
// their JSON encodings. Two statuses that encode alike store alike (a nil
// and an empty list, say), so writing one over the other is a write for
// nothing. cur and next may be typed statuses or json.RawMessage (a cached
// object's raw status field; nil for none). A value that does not encode
// counts as changed.
func StatusChanged(cur, next any) bool {
	a, err := json.Marshal(cur)
	if err != nil {
		return true
	}
	b, err := json.Marshal(next)
	return err != nil || !bytes.Equal(a, b)
}

// KeepErrorTime gives next, the lastError about to be written, the time of
// cur, the one recorded, when both say the same (reason and message):
// meeting the same error again is not a change of status (StatusChanged).
func KeepErrorTime(cur, next *api.LastError) {
	if cur != nil && next != nil && cur.Reason == next.Reason && cur.Message == next.Message {
		next.Time = cur.Time
	}
}
