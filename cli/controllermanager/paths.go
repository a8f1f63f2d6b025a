package controllermanager

import (
	"errors"
	"fmt"
	"path/filepath"

	rtlocal "cairn.dev/cairn/runtime/local"
)

// absPaths makes every path flag absolute, against the working directory
// at start: the controllers hand these paths to the commands they run
// (CAIRN_CA_FILE), which run in directories of their own. Errors: the
// working directory cannot be read.
func absPaths(f *flags) error {
	for name, p := range map[string]*string{"--token-file": &f.tokenFile, "--certificate-authority": &f.caFile, "--runtime-dir": &f.runtimeDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, *p, err)
		}
		*p = abs
	}
	return nil
}

// runtimeDirError explains a runtime that could not open dir: when another
// process owns it, each controller-manager needs a --runtime-dir of its own.
func runtimeDirError(dir string, err error) error {
	if errors.Is(err, rtlocal.ErrLocked) {
		return fmt.Errorf("--runtime-dir %s is in use by another controller-manager or server on this host: "+
			"give each one a directory of its own with --runtime-dir (%w)", dir, err)
	}
	return fmt.Errorf("--runtime-dir: %w", err)
}
