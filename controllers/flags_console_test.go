package controllers_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"cairn.dev/cairn/controllers"
)

func TestFlags_ConsoleURLIsParsedAndBadValuesNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true},
		{"https://cairn.example.com/ui/", true},
		{"http://127.0.0.1:8443/ui/", true},
		{"cairn.example.com/ui/", false},
		{"ftp://cairn.example.com/ui/", false},
		{"https:///ui/", false},
		{"https://cairn.example.com/%zz", false},
	} {
		var f controllers.Flags
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.AddFlags(fs, "controllers")
		args := []string{"--controllers=false"}
		if tc.value != "" {
			args = append(args, "--console-url="+tc.value)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		if f.Config.ConsoleURL != tc.value {
			t.Errorf("--console-url=%q: Config.ConsoleURL %q", tc.value, f.Config.ConsoleURL)
		}
		_, err := f.Selected()
		if tc.ok != (err == nil) {
			t.Errorf("--console-url=%q: error %v, want ok=%v", tc.value, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--console-url") {
			t.Errorf("--console-url=%q: the error %q does not name the flag", tc.value, err)
		}
	}
}
