package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/internal/privfile"
)

// DefaultServer is the server address used when nothing else names one:
// where `cairn server` listens by default.
const DefaultServer = "https://127.0.0.1:7070"

// Environment variables that override the config file.
const (
	EnvServer = "CAIRN_SERVER"
	EnvToken  = "CAIRN_TOKEN"
	// EnvCAFile names a PEM file of the CA the server's certificate is
	// issued by (a worker's environment has it).
	EnvCAFile = "CAIRN_CA_FILE"
)

// Config says how to reach a cairn server. It is stored as YAML with the
// keys server, token and certificateAuthorityData (see LoadConfig and
// WriteConfig).
type Config struct {
	// Server is the base URL, e.g. "https://127.0.0.1:7070". A bare
	// host:port means https.
	Server string `json:"server"`
	// Token is the bearer token sent with every request.
	Token string `json:"token,omitempty"`
	// CertificateAuthorityData is the PEM certificate of the CA that
	// issued the server's certificate (the one `cairn server` creates);
	// empty trusts the system's roots (or CAFile).
	CertificateAuthorityData string `json:"certificateAuthorityData,omitempty"`
	// CAFile names a PEM file holding that CA instead.
	CAFile string `json:"caFile,omitempty"`
	// TokenSource says where Token came from ("the --token flag", "the
	// CAIRN_TOKEN environment variable", "the config file PATH"); error
	// messages about a rejected token name it. Not stored.
	TokenSource string `json:"-"`
	// HTTPClient sends the requests; default a client with no overall
	// timeout (watches are long-lived; requests are bounded by their
	// context). Not stored.
	HTTPClient *http.Client `json:"-"`
}

// TLSConfig is the client TLS configuration of cfg: trusting the system's
// roots and the CA of CertificateAuthorityData (or CAFile); nil (the
// system's roots) when cfg names no CA. Errors: an unreadable CAFile, or CA
// data holding no PEM certificate.
func (cfg Config) TLSConfig() (*tls.Config, error) {
	data := []byte(cfg.CertificateAuthorityData)
	if len(data) == 0 && cfg.CAFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("client: read the CA file: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("client: the CA data holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// DefaultConfigPath returns ~/.cairn/config, or .cairn/config in the
// current directory when the home directory is unknown.
func DefaultConfigPath() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".cairn", "config")
	}
	return filepath.Join(home, ".cairn", "config")
}

// LoadConfig reads the config file at path. It does not block beyond the
// file read. Errors: one matching fs.ErrNotExist when the file is missing;
// a parse error naming the file otherwise.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("client: read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("client: config file %s: %w", path, err)
	}
	if cfg.Token != "" {
		cfg.TokenSource = "the config file " + path
	}
	return cfg, nil
}

// WriteConfig stores cfg's server, token and CA at path, creating the
// directory with mode 0700 if needed and writing the file with mode 0600
// (it holds a credential). The file is replaced atomically. Errors: any
// failure to create the directory or write the file.
func WriteConfig(path string, cfg Config) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("client: write config: %w", err)
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("client: write config: %w", err)
	}
	if err := privfile.Write(path, raw); err != nil {
		return fmt.Errorf("client: write config: %w", err)
	}
	return nil
}

// ResolveConfig builds the config the CLI uses, taking each setting from the
// first source that has it: the flags (flagServer, flagToken; "" means
// unset), then CAIRN_SERVER / CAIRN_TOKEN / CAIRN_CA_FILE, then the config
// file at path (DefaultConfigPath when path is ""). The server defaults to
// DefaultServer; the token has no default; the CA is trusted besides the
// system's roots. TokenSource records where the token came from.
//
// A missing config file is not an error; a file that does not parse is.
func ResolveConfig(flagServer, flagToken, path string) (Config, error) {
	if path == "" {
		path = DefaultConfigPath()
	}
	file, err := LoadConfig(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Config{}, err
	}
	var cfg Config
	switch {
	case flagServer != "":
		cfg.Server = flagServer
	case os.Getenv(EnvServer) != "":
		cfg.Server = os.Getenv(EnvServer)
	case file.Server != "":
		cfg.Server = file.Server
	default:
		cfg.Server = DefaultServer
	}
	// The file's CA is trusted besides the system's roots, also for a
	// server named otherwise: the servers of one store share their CA, and
	// trusting one CA more lets no other server pass.
	if ca := os.Getenv(EnvCAFile); ca != "" {
		cfg.CAFile = ca
	} else {
		cfg.CertificateAuthorityData, cfg.CAFile = file.CertificateAuthorityData, file.CAFile
	}
	switch {
	case flagToken != "":
		cfg.Token, cfg.TokenSource = flagToken, "the --token flag"
	case os.Getenv(EnvToken) != "":
		cfg.Token, cfg.TokenSource = os.Getenv(EnvToken), "the "+EnvToken+" environment variable"
	case file.Token != "":
		cfg.Token, cfg.TokenSource = file.Token, file.TokenSource
	}
	cfg.Server = strings.TrimSpace(cfg.Server)
	cfg.Token = strings.TrimSpace(cfg.Token)
	return cfg, nil
}
