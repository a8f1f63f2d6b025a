package local

import (
	"fmt"

	"github.com/spf13/pflag"
)

// IsolationFlags are the flags of `cairn server` and `cairn
// controller-manager` that say whom units run as (Isolation).
type IsolationFlags struct {
	isolation string
	user      string
	uids      string
}

// AddFlags defines --runtime-isolation, --runtime-user and --runtime-uids.
func (f *IsolationFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.isolation, "runtime-isolation", "users",
		"whom units (workers, jobs, container deploy items) run as: users (needs root: a uid of their own each, or --runtime-user), "+
			"or none (as cairn's own user: units can read cairn's data dir, tokens and keys)")
	fs.StringVar(&f.user, "runtime-user", "",
		"run every unit as this existing unprivileged user instead of a uid of its own (units then share a uid and can read each other's workspaces)")
	fs.StringVar(&f.uids, "runtime-uids", "",
		"the range FIRST-LAST units get a uid (and gid) of their own from (default "+DefaultUIDs.String()+"); no user or group of /etc/passwd or /etc/group may be in it")
}

// Isolation returns the Isolation the flags ask for, checking their
// syntax; New checks it against the machine. Errors: ErrBadIsolation
// naming the flag.
func (f *IsolationFlags) Isolation() (Isolation, error) {
	uidsSet := f.uids != ""
	switch f.isolation {
	case "none":
		if f.user != "" || uidsSet {
			return Isolation{}, fmt.Errorf("%w: --runtime-isolation=none runs units as cairn's own user; drop --runtime-user and --runtime-uids", ErrBadIsolation)
		}
		return Isolation{None: true}, nil
	case "users":
	default:
		return Isolation{}, fmt.Errorf("%w: --runtime-isolation %q: use users or none", ErrBadIsolation, f.isolation)
	}
	if f.user != "" {
		if uidsSet {
			return Isolation{}, fmt.Errorf("%w: give --runtime-user or --runtime-uids, not both", ErrBadIsolation)
		}
		return Isolation{User: f.user}, nil
	}
	if !uidsSet {
		return Isolation{}, nil
	}
	r, err := ParseUIDRange(f.uids)
	if err != nil {
		return Isolation{}, err
	}
	return Isolation{UIDs: r}, nil
}
