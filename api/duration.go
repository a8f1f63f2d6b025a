package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("90s",
// "360h") on the wire.
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON reads a Go duration string. A number is refused: its unit
// would be a guess.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"1h30m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"90s\" or \"1h30m\"", s)
	}
	d.Duration = v
	return nil
}

// LastError is the last error a controller met with an object: a
// machine-readable reason, a message for people, and when it happened.
// Messages name things (objects, fields, imports); they never carry secret
// values.
type LastError struct {
	Reason  ErrorReason `json:"reason"`
	Message string      `json:"message"`
	Time    time.Time   `json:"time,omitzero"`
}
