package serve

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"cairn.dev/cairn/daemon"
)

// namespaceLimitFlags adds the flags of the default namespace limits.
func namespaceLimitFlags(fs *pflag.FlagSet, f *flags) {
	fs.Int64Var(&f.nsMaxObjects, "namespace-max-objects", daemon.DefaultNamespaceMaxObjects,
		"most objects a namespace may hold when its spec.limits.objects is unset (0: no limit)")
	fs.StringVar(&f.nsMaxBytes, "namespace-max-bytes", resource.NewQuantity(daemon.DefaultNamespaceMaxBytes, resource.BinarySI).String(),
		`most bytes of stored objects a namespace may hold when its spec.limits.bytes is unset, e.g. "512Mi" (0: no limit)`)
}

// namespaceLimits are the default namespace limits the flags set, as
// daemon.Options takes them (negative for none).
func namespaceLimits(f *flags) (objects, bytes int64, err error) {
	if f.nsMaxObjects < 0 {
		return 0, 0, fmt.Errorf("--namespace-max-objects must not be negative, got %d (0: no limit)", f.nsMaxObjects)
	}
	bytes, err = parseSize(f.nsMaxBytes)
	switch {
	case err != nil && !errors.Is(err, errNotWhole):
		return 0, 0, fmt.Errorf(`--namespace-max-bytes %q: want a number of bytes such as 536870912 or "512Mi"`, f.nsMaxBytes)
	case err != nil || bytes < 0:
		return 0, 0, fmt.Errorf("--namespace-max-bytes %q: want a whole, non-negative number of bytes (0: no limit)", f.nsMaxBytes)
	}
	return noLimitIfZero(f.nsMaxObjects), noLimitIfZero(bytes), nil
}
