package runtime

import (
	"fmt"
	"path"
	"strings"
)

// MaxIDLength bounds a unit ID.
const MaxIDLength = 200

// ValidateID checks a unit ID: lower-case letters, digits, '.', '-' and
// '_', starting with a letter or digit, 1 to MaxIDLength characters. The
// error wraps ErrInvalid.
func ValidateID(id string) error {
	if id == "" || len(id) > MaxIDLength {
		return fmt.Errorf("%w: id must have 1 to %d characters", ErrInvalid, MaxIDLength)
	}
	for i, c := range id {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%w: id %q must start with a lower-case letter or digit", ErrInvalid, id)
		}
		if !alnum && c != '.' && c != '-' && c != '_' {
			return fmt.Errorf("%w: id %q may hold only a-z, 0-9, '.', '-' and '_'", ErrInvalid, id)
		}
	}
	return nil
}

// ValidateRelPath checks a path that must stay inside a unit's workspace:
// relative, slash-separated, no ".." element, no NUL. It returns the cleaned
// path; the error wraps ErrInvalid and names what (e.g. "files").
func ValidateRelPath(what, p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%w: %s: empty path", ErrInvalid, what)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%w: %s: %q is absolute", ErrInvalid, what, p)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: %s: %q holds a NUL byte", ErrInvalid, what, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %s: %q leaves the workspace", ErrInvalid, what, p)
		}
	}
	return path.Clean(p), nil
}

// ValidateSpec checks a spec before anything is created. The error wraps
// ErrInvalid and never quotes environment values or file contents.
func ValidateSpec(s Spec) error {
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return fmt.Errorf("%w: argv: a command is required", ErrInvalid)
	}
	for i, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: argv[%d] holds a NUL byte", ErrInvalid, i)
		}
	}
	for i, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: env[%d] is not KEY=VALUE", ErrInvalid, i)
		}
		if strings.ContainsRune(kv, 0) {
			return fmt.Errorf("%w: env %s holds a NUL byte", ErrInvalid, k)
		}
	}
	if s.WorkspaceEnv != "" && (strings.ContainsAny(s.WorkspaceEnv, "=\x00")) {
		return fmt.Errorf("%w: workspaceEnv %q is not a variable name", ErrInvalid, s.WorkspaceEnv)
	}
	for name := range s.Files {
		clean, err := ValidateRelPath("files", name)
		if err != nil {
			return err
		}
		if clean == "." {
			return fmt.Errorf("%w: files: %q names the workspace itself", ErrInvalid, name)
		}
	}
	if s.Dir != "" {
		if _, err := ValidateRelPath("dir", s.Dir); err != nil {
			return err
		}
	}
	return nil
}
