package controllermanager

import (
	"fmt"
	"log/slog"

	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
)

// unitRuntime is the runtime the controllers run units on.
type unitRuntime interface {
	runtime.Runtime
	Close() error
}

// openRuntime returns the kubernetes runtime when --runtime kubernetes
// asks for it, otherwise the local runtime in dir. Errors: bad --runtime*
// flags, a runtime that cannot be opened, each naming the flag.
func (f *flags) openRuntime(dir string, isolation rtlocal.Isolation, log *slog.Logger) (unitRuntime, error) {
	kube, err := f.runtimeSelect.Open(log)
	if err != nil {
		return nil, err
	}
	if kube != nil {
		return kube, nil
	}
	rt, err := rtlocal.New(rtlocal.Options{Root: dir, Logger: log, Isolation: isolation})
	if err != nil {
		return nil, fmt.Errorf("--runtime-dir %s: %w", dir, err)
	}
	return rt, nil
}
