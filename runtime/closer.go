package runtime

// Closer is a Runtime its owner closes when it stops: what a process that
// runs units (cairn server, cairn controller-manager) is given to run them
// on (runtime/local, runtime/kubernetes). Close releases what the Runtime
// holds and stops its goroutines, blocking until they have ended; units
// keep running and a later Runtime over the same place finds them again.
// Calls after Close return ErrClosed. Close's error is the release's.
type Closer interface {
	Runtime
	Close() error
}
