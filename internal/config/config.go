// Package config resolves where fieldwork connects: brokers, TLS, SASL and the store DSN,
// from flags, FIELDWORK_* environment variables and a YAML file of named contexts, in that
// order of precedence (flag beats environment beats context).
//
// Passwords never come from a flag value: only from an environment variable or a file. The
// resolved password is never marshalled, and no error of the package holds it. Every error
// is a usage error (fwerr.KindUsage): what the person running fieldwork configured is wrong.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// TLS is the client TLS configuration for brokers. The client key is a PEM key (plain,
// PKCS#8-encrypted or legacy-encrypted) beside a PEM certificate, or a PKCS#12 bundle holding
// both; the password of an encrypted key or a bundle is read from KeyPasswordEnv (an
// environment variable's name) or KeyPasswordFile when the connection is resolved.
type TLS struct {
	Enabled            bool   `yaml:"enabled" json:"enabled"`
	CAFile             string `yaml:"ca_file" json:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file" json:"key_file,omitempty"`
	PKCS12File         string `yaml:"pkcs12_file" json:"pkcs12_file,omitempty"`
	KeyPasswordEnv     string `yaml:"key_password_env" json:"key_password_env,omitempty"`
	KeyPasswordFile    string `yaml:"key_password_file" json:"key_password_file,omitempty"`
	ServerName         string `yaml:"server_name" json:"server_name,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// SASL is the client SASL configuration for brokers. The password is read from PasswordEnv
// (an environment variable's name) or PasswordFile when the connection is resolved.
//
// OAUTHBEARER takes a static token (TokenEnv, TokenFile) or, with TokenURL, fetches one from a
// token endpoint with the client-credentials grant: ClientID, a secret from ClientSecretEnv
// or ClientSecretFile, and an optional Scope. Secrets come from the environment or files
// only, as passwords do.
//
// AWS_MSK_IAM takes none of these: its credentials come from the AWS SDK's default chain.
type SASL struct {
	Mechanism    string `yaml:"mechanism" json:"mechanism,omitempty"`
	Username     string `yaml:"username" json:"username,omitempty"`
	PasswordEnv  string `yaml:"password_env" json:"password_env,omitempty"`
	PasswordFile string `yaml:"password_file" json:"password_file,omitempty"`

	TokenEnv         string `yaml:"token_env" json:"token_env,omitempty"`
	TokenFile        string `yaml:"token_file" json:"token_file,omitempty"`
	TokenURL         string `yaml:"token_url" json:"token_url,omitempty"`
	ClientID         string `yaml:"client_id" json:"client_id,omitempty"`
	ClientSecretEnv  string `yaml:"client_secret_env" json:"client_secret_env,omitempty"`
	ClientSecretFile string `yaml:"client_secret_file" json:"client_secret_file,omitempty"`
	Scope            string `yaml:"scope" json:"scope,omitempty"`
}

// SchemaRegistry is where record payloads framed in the Confluent wire format find their
// schemas (docs/design.md §3.6): a Confluent-compatible registry's base URL, HTTP basic auth
// (Username, the password from PasswordEnv or PasswordFile) or a bearer token (TokenEnv,
// TokenFile), and TLS for an https URL (CA, client certificate and key, as for brokers).
type SchemaRegistry struct {
	URL          string `yaml:"url" json:"url,omitempty"`
	Username     string `yaml:"username" json:"username,omitempty"`
	PasswordEnv  string `yaml:"password_env" json:"password_env,omitempty"`
	PasswordFile string `yaml:"password_file" json:"password_file,omitempty"`
	TokenEnv     string `yaml:"token_env" json:"token_env,omitempty"`
	TokenFile    string `yaml:"token_file" json:"token_file,omitempty"`
	TLS          TLS    `yaml:"tls" json:"tls"`
}

// Context is one named environment in the config file. DSNPasswordEnv names the environment
// variable that holds the store's password, DSNPasswordFile a file holding it; either is used
// only when the DSN holds no password of its own.
type Context struct {
	Brokers         []string `yaml:"brokers" json:"brokers"`
	DSN             string   `yaml:"dsn" json:"dsn"`
	DSNPasswordEnv  string   `yaml:"dsn_password_env" json:"dsn_password_env,omitempty"`
	DSNPasswordFile string   `yaml:"dsn_password_file" json:"dsn_password_file,omitempty"`
	TLS             TLS      `yaml:"tls" json:"tls"`
	SASL            SASL     `yaml:"sasl" json:"sasl"`
	// SchemaRegistry is the registry payloads are decoded through; zero when none.
	SchemaRegistry SchemaRegistry `yaml:"schema_registry" json:"schema_registry"`
	// DLQPattern is the regular expression that finds this cluster's dead-letter topics when
	// a dlq command names none (dlq.DefaultTopicPattern when empty).
	DLQPattern string `yaml:"dlq_pattern" json:"dlq_pattern,omitempty"`
}

// File is the config file: named contexts and the one used when none is named.
type File struct {
	CurrentContext string             `yaml:"current_context"`
	Contexts       map[string]Context `yaml:"contexts"`

	// Warnings are what Load found worth saying about the file itself (docs/design.md §4.2).
	Warnings []string `yaml:"-"`
}

// DefaultPath is $FIELDWORK_CONFIG, else $XDG_CONFIG_HOME/fieldwork/config.yaml, else
// ~/.config/fieldwork/config.yaml.
func DefaultPath(getenv func(string) string) string {
	if p := getenv("FIELDWORK_CONFIG"); p != "" {
		return p
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "fieldwork", "config.yaml")
}

// Load reads a config file. A file that does not exist is an empty config, not an error; one
// that cannot be read or parsed is a usage error.
func Load(path string) (*File, error) {
	f := &File{}
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read config %s: %w", path, err))
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) {
		// YAML's messages quote keys (and the start of values): a DSN written where a key goes
		// would show its password.
		return nil, fwerr.Usagef("parse config %s: %s", path, redact.Scrub(secretFieldHints(err), docSecrets(b)...))
	}
	if holdsPassword(f) {
		if w := exposed("config file", path); w != "" {
			f.Warnings = append(f.Warnings, w)
		}
	}
	return f, nil
}

// secretFields are the keys a secret would be written under, and the keys that name where it
// is read from instead.
var secretFields = map[string]string{
	"password":      "password_env (a variable's name) or password_file",
	"token":         "token_env or token_file",
	"client_secret": "client_secret_env or client_secret_file",
	"key_password":  "key_password_env or key_password_file",
	"dsn_password":  "the DSN itself, dsn_password_env or dsn_password_file",
}

// secretFieldHints is the message of a config file that does not parse, each unknown key that
// would hold a secret (password: …) followed by where the secret goes instead: the file never
// holds one (docs/design.md §4.2).
func secretFieldHints(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	for i, e := range te.Errors {
		for key, instead := range secretFields {
			if strings.Contains(e, "field "+key+" not found") {
				te.Errors[i] += ": a secret is never written in the config file; name where it is read from with " + instead
			}
		}
	}
	return te.Error()
}

// docSecrets returns every password that a DSN written anywhere in a config document holds,
// in a key or a value, quoted or not: redact.Text recognises a password in free text only up
// to a quote or a backtick, and YAML quotes a key as it was written.
func docSecrets(doc []byte) []string {
	var out []string
	for _, field := range strings.Fields(string(doc)) {
		out = append(out, redact.Secrets(strings.Trim(field, `"'{}[],:`))...)
	}
	return out
}

// holdsPassword reports whether a context's DSN carries a password.
func holdsPassword(f *File) bool {
	for _, c := range f.Contexts {
		if len(redact.Secrets(c.DSN)) > 0 {
			return true
		}
	}
	return false
}

// exposed returns a warning when the file at path, which holds a secret, can be read by its
// group or by everyone, and "" otherwise (or when it cannot be examined).
func exposed(what, path string) string {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o044 == 0 {
		return ""
	}
	who := "its group"
	if fi.Mode().Perm()&0o004 != 0 {
		who = "every local user"
	}
	return fmt.Sprintf("%s %s can be read by %s (mode %04o): chmod 600 %s", what, path, who, fi.Mode().Perm(), path)
}
