package local

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// aUserID returns the name and uid of a user of /etc/passwd other than
// root.
func aUserID(t *testing.T) (string, uint32) {
	t.Helper()
	f, err := os.Open("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(fields[2], 10, 32); err == nil && id != 0 {
			return fields[0], uint32(id)
		}
	}
	t.Skip("no user but root in /etc/passwd")
	return "", 0
}

// Bad input is refused at start, naming the flag and the fix.
func TestIsolation_BadInputIsRefusedNamingTheFlag(t *testing.T) {
	name, uid := aUserID(t)
	cases := []struct {
		name string
		iso  Isolation
		euid int
		is   error
		says []string
	}{
		{"not root", Isolation{}, 1000, ErrNotRoot, []string{"uid 1000, not root", "run cairn as root", "--runtime-isolation=none"}},
		{"no such user", Isolation{User: "cairn-no-such-user"}, 0, ErrBadIsolation,
			[]string{`--runtime-user "cairn-no-such-user": no such user`, "useradd"}},
		{"root user", Isolation{User: "root"}, 0, ErrBadIsolation, []string{`--runtime-user "root" is root`}},
		{"range over a user", Isolation{UIDs: UIDRange{First: uid, Last: uid}}, 0, ErrBadIsolation,
			[]string{"--runtime-uids", strconv.Itoa(int(uid)), `user "` + name + `" in /etc/passwd`, "choose a range"}},
		{"range with root", Isolation{UIDs: UIDRange{First: 0, Last: 10}}, 0, ErrBadIsolation, []string{"--runtime-uids 0-10"}},
		{"backwards range", Isolation{UIDs: UIDRange{First: 300000, Last: 200000}}, 0, ErrBadIsolation, []string{"--runtime-uids"}},
		{"user and range", Isolation{User: "nobody", UIDs: DefaultUIDs}, 0, ErrBadIsolation, []string{"not both"}},
		{"none and user", Isolation{None: true, User: "nobody"}, 0, ErrBadIsolation, []string{"--runtime-isolation=none", "drop --runtime-user"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolve(c.iso, c.euid)
			if !errors.Is(err, c.is) {
				t.Fatalf("resolve: %v, want %v", err, c.is)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	if ra, err := resolve(Isolation{}, 0); err != nil || ra.uids != DefaultUIDs || ra.none {
		t.Fatalf("the default: %+v, %v; want a uid each from %s", ra, err, DefaultUIDs)
	}
	if ra, err := resolve(Isolation{None: true}, 1000); err != nil || !ra.none {
		t.Fatalf("the opt-out as a user: %+v, %v", ra, err)
	}
}

func TestIsolationFlags_AreParsedOrRefusedNamingTheFlag(t *testing.T) {
	cases := []struct {
		flags IsolationFlags
		want  Isolation
		err   string
	}{
		{IsolationFlags{isolation: "users"}, Isolation{}, ""},
		{IsolationFlags{isolation: "none"}, Isolation{None: true}, ""},
		{IsolationFlags{isolation: "users", user: "build"}, Isolation{User: "build"}, ""},
		{IsolationFlags{isolation: "users", uids: "300000-300999"}, Isolation{UIDs: UIDRange{300000, 300999}}, ""},
		{IsolationFlags{isolation: "users", uids: "300000"}, Isolation{}, `--runtime-uids "300000" has no '-'`},
		{IsolationFlags{isolation: "users", uids: "a-b"}, Isolation{}, `--runtime-uids "a-b" is not two numbers`},
		{IsolationFlags{isolation: "users", uids: "0-100"}, Isolation{}, `includes root`},
		{IsolationFlags{isolation: "users", uids: "9-3"}, Isolation{}, `ends before it starts`},
		{IsolationFlags{isolation: "users", user: "build", uids: "300000-300999"}, Isolation{}, "not both"},
		{IsolationFlags{isolation: "none", user: "build"}, Isolation{}, "drop --runtime-user"},
		{IsolationFlags{isolation: "chroot"}, Isolation{}, `--runtime-isolation "chroot": use users or none`},
	}
	for _, c := range cases {
		got, err := c.flags.Isolation()
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%+v: %+v, %v; want %+v", c.flags, got, err, c.want)
		case c.err != "" && (!errors.Is(err, ErrBadIsolation) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%+v: %v, want ErrBadIsolation saying %q", c.flags, err, c.err)
		}
	}
}
