package client_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"cairn.dev/cairn/client"
)

func TestWriteConfig_IsPrivateAndRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", ".cairn", "config")
	want := client.Config{Server: "http://127.0.0.1:7070", Token: "s3cret"}
	if err := client.WriteConfig(path, want); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode = %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
	got, err := client.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != want.Server || got.Token != want.Token || got.TokenSource != "the config file "+path {
		t.Errorf("LoadConfig = %+v, want %+v from the file", got, want)
	}
	// Overwriting keeps the mode.
	if err := client.WriteConfig(path, client.Config{Server: "http://x:1"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after rewrite = %v", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if string(raw) != "server: http://x:1\n" {
		t.Errorf("file = %q", raw)
	}
}

func TestLoadConfig_Errors(t *testing.T) {
	dir := t.TempDir()
	if _, err := client.LoadConfig(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("server: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadConfig(bad); err == nil {
		t.Error("malformed file loaded")
	}
	unknown := filepath.Join(dir, "unknown")
	if err := os.WriteFile(unknown, []byte("srever: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadConfig(unknown); err == nil {
		t.Error("file with an unknown key loaded")
	}
}

func TestResolveConfig_FlagsBeatEnvironmentBeatsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	if err := client.WriteConfig(file, client.Config{Server: "http://file:1", Token: "file-token"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                string
		flagServer, flagTok string
		envServer, envTok   string
		path                string
		wantServer, wantTok string
		wantSource          string
	}{
		{"file only", "", "", "", "", file, "http://file:1", "file-token", "the config file " + file},
		{"env beats file", "", "", "http://env:2", "env-token", file, "http://env:2", "env-token", "the CAIRN_TOKEN environment variable"},
		{"flags beat env", "http://flag:3", "flag-token", "http://env:2", "env-token", file, "http://flag:3", "flag-token", "the --token flag"},
		{"mixed", "", "flag-token", "http://env:2", "", file, "http://env:2", "flag-token", "the --token flag"},
		{"no file", "", "", "", "", filepath.Join(dir, "none"), client.DefaultServer, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(client.EnvServer, tt.envServer)
			t.Setenv(client.EnvToken, tt.envTok)
			cfg, err := client.ResolveConfig(tt.flagServer, tt.flagTok, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server != tt.wantServer || cfg.Token != tt.wantTok || cfg.TokenSource != tt.wantSource {
				t.Errorf("got server %q token %q source %q, want %q %q %q",
					cfg.Server, cfg.Token, cfg.TokenSource, tt.wantServer, tt.wantTok, tt.wantSource)
			}
		})
	}
}

func TestNewHTTP_RejectsBadServerAddresses(t *testing.T) {
	for _, s := range []string{"ftp://host:1", "http://", "http://[::1"} {
		if _, err := client.NewHTTP(client.Config{Server: s}); err == nil {
			t.Errorf("NewHTTP(%q) succeeded", s)
		}
	}
	for _, s := range []string{"127.0.0.1:7070", "https://cairn.example", ""} {
		if _, err := client.NewHTTP(client.Config{Server: s}); err != nil {
			t.Errorf("NewHTTP(%q) = %v", s, err)
		}
	}
}
