package api

import "time"

// Lease holds the state of one leader election: who leads, since when, and
// when the leader last confirmed it still does. It is cluster-scoped; the
// controllers' election uses the Lease named "controllers". Candidates
// change it only by compare-and-swap updates on its resourceVersion (see
// package lease for the rules that make that safe).
type Lease struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       LeaseSpec `json:"spec"`
}

// LeaseSpec is the election record.
type LeaseSpec struct {
	// HolderIdentity is the leader's URL, where it serves its traces and
	// metrics; "" when nobody holds the lease (released).
	HolderIdentity string `json:"holderIdentity,omitempty"`
	// LeaseDurationSeconds is how long candidates wait, after they last saw
	// the record change, before they take the lease over.
	LeaseDurationSeconds int `json:"leaseDurationSeconds,omitempty"`
	// AcquireTime is when the holder acquired the lease (RFC 3339,
	// microsecond precision, the holder's clock).
	AcquireTime time.Time `json:"acquireTime,omitzero"`
	// RenewTime is when the holder last renewed the lease (RFC 3339,
	// microsecond precision, the holder's clock). Informational: no
	// candidate compares it with its own clock to decide expiry.
	RenewTime time.Time `json:"renewTime,omitzero"`
	// LeaseTransitions counts the changes of holder.
	LeaseTransitions int `json:"leaseTransitions,omitempty"`
}
