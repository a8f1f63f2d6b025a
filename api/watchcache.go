package api

// EventEncoder is implemented by a Watcher whose events are shared with
// other watchers (the registry's watch cache): it hands out the wire form
// of an event, encoded once for every watcher that sends it. Servers check
// for it with a type assertion and fall back to marshaling themselves.
type EventEncoder interface {
	// EncodeEvent returns the newline-terminated JSON of
	// WatchEvent{Type: ev.Type, Object: <ev.Object as JSON>}, byte for byte
	// what json.Marshal gives, for an event this watcher delivered. The
	// bytes may be shared: the caller must not modify them. It does not
	// block; it fails only when the object does not marshal.
	EncodeEvent(ev Event) ([]byte, error)
}
