package serve

import (
	"fmt"
	"path/filepath"
)

// absPaths makes every path flag absolute, against the working directory
// at start, so that no later change of directory, and no command the
// controllers run elsewhere, reads another file. Errors: the working
// directory cannot be read.
func absPaths(f *flags) error {
	for name, p := range map[string]*string{"--tls-cert-file": &f.tlsCertFile, "--tls-private-key-file": &f.tlsKeyFile,
		"--data-dir": &f.dataDir, "--encryption-key-file": &f.encryptionKeyFile, "--runtime-dir": &f.runtimeDir} {
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
