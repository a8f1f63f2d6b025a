package api

// Limits on an object's metadata lists. The server refuses a write beyond
// any of them with 422 Invalid naming the field (a TooMany or TooLong
// cause), before it reads or writes anything else, and checks each list in
// time linear in its length. A stored object already beyond a limit (one
// written before the limit existed) may still be updated as long as the
// list does not grow, so that its finalizers can be removed.
//
// The numbers keep one object's write well inside what etcd accepts in one
// transaction with its default --max-txn-ops of 128, so that cairn works on
// an external etcd left at its defaults: a create compares its own key, its
// namespace (two compares) and each owner it references (one compare each),
// so at most 3 + MaxOwnerReferences = 35 compares and two writes.
const (
	// MaxFinalizers bounds metadata.finalizers. Each finalizer is a
	// controller's promise to clean up before the object goes, and each
	// must be removed by a write of its own: 32 leaves room for many
	// controllers per object while keeping a deletion a bounded number of
	// writes.
	MaxFinalizers = 32

	// MaxOwnerReferences bounds metadata.ownerReferences. Every owner an
	// update newly references is read and then guarded by one compare in
	// the etcd transaction, so this bounds both the reads before a write
	// and the transaction's size (see above), and the garbage collector's
	// work per dependent.
	MaxOwnerReferences = 32

	// MaxLabels bounds the number of metadata.labels. Labels are matched
	// by every selector of every list and watch; 256 is far more than
	// selection needs. A label's key is at most 317 bytes and its value
	// at most 63, so the labels of one object stay under 96 KiB.
	MaxLabels = 256

	// MaxAnnotations bounds the number of metadata.annotations.
	MaxAnnotations = 256

	// MaxAnnotationBytes bounds the total size of metadata.annotations,
	// keys and values together: 256 KiB.
	MaxAnnotationBytes = 256 << 10
)
