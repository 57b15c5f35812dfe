package config

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// Flags are the connection values given on the command line. Empty means "not given".
type Flags struct {
	Brokers []string
	Context string
	DSN     string

	TLS              bool
	TLSCAFile        string
	TLSCertFile      string
	TLSKeyFile       string
	TLSServerName    string
	TLSInsecure      bool
	SASLMechanism    string
	SASLUsername     string
	SASLPasswordFile string

	SASLTokenFile        string
	SASLTokenURL         string
	SASLClientID         string
	SASLClientSecretFile string
	SASLScope            string
}

// Connection is the resolved place fieldwork connects to.
type Connection struct {
	Context  string // the context used, "" when none
	Brokers  []string
	DSN      string
	TLS      TLS
	SASL     SASL
	Password string `json:"-"` // the SASL password, resolved; never printed
	// Token is the static OAUTHBEARER token, ClientSecret the client-credentials secret,
	// resolved; never printed.
	Token        string `json:"-"`
	ClientSecret string `json:"-"`
}

// MechanismOAuthBearer is SASL/OAUTHBEARER (RFC 7628): a bearer token, static or fetched from
// a token endpoint.
const MechanismOAuthBearer = "OAUTHBEARER"

// PasswordMechanisms are the SASL mechanisms of a username and a password.
var PasswordMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Mechanisms are the accepted SASL mechanisms.
var Mechanisms = append(slices.Clone(PasswordMechanisms), MechanismOAuthBearer)

// Resolve merges flags, environment and the config file. getenv is os.Getenv in production.
// It fails, with a usage error, when a named context does not exist, a SASL mechanism is
// unknown, or a password is needed and cannot be read.
func Resolve(fl Flags, getenv func(string) string, file *File) (Connection, error) {
	var c Connection
	name := first(fl.Context, getenv("FIELDWORK_CONTEXT"))
	if name == "" && file != nil {
		name = file.CurrentContext
	}
	var ctx Context
	if name != "" {
		var ok bool
		if file != nil {
			ctx, ok = file.Contexts[name]
		}
		if !ok {
			return c, fwerr.Usagef("context %q is not defined in the config file (known: %s)", name, known(file))
		}
		c.Context = name
	}

	c.Brokers = fl.Brokers
	if len(c.Brokers) == 0 {
		c.Brokers = splitList(getenv("FIELDWORK_BROKERS"))
	}
	if len(c.Brokers) == 0 {
		c.Brokers = ctx.Brokers
	}
	c.DSN = first(fl.DSN, getenv("FIELDWORK_DSN"), ctx.DSN)

	c.TLS = TLS{
		Enabled:            fl.TLS || envBool(getenv("FIELDWORK_TLS")) || ctx.TLS.Enabled,
		CAFile:             first(fl.TLSCAFile, getenv("FIELDWORK_TLS_CA"), ctx.TLS.CAFile),
		CertFile:           first(fl.TLSCertFile, getenv("FIELDWORK_TLS_CERT"), ctx.TLS.CertFile),
		KeyFile:            first(fl.TLSKeyFile, getenv("FIELDWORK_TLS_KEY"), ctx.TLS.KeyFile),
		ServerName:         first(fl.TLSServerName, getenv("FIELDWORK_TLS_SERVER_NAME"), ctx.TLS.ServerName),
		InsecureSkipVerify: fl.TLSInsecure || envBool(getenv("FIELDWORK_TLS_INSECURE_SKIP_VERIFY")) || ctx.TLS.InsecureSkipVerify,
	}
	// Any TLS file implies TLS.
	if c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.KeyFile != "" {
		c.TLS.Enabled = true
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return c, fwerr.Usagef("a TLS client certificate needs both a certificate and a key file")
	}

	c.SASL = SASL{
		Mechanism:    strings.ToUpper(first(fl.SASLMechanism, getenv("FIELDWORK_SASL_MECHANISM"), ctx.SASL.Mechanism)),
		Username:     first(fl.SASLUsername, getenv("FIELDWORK_SASL_USERNAME"), ctx.SASL.Username),
		PasswordFile: first(fl.SASLPasswordFile, getenv("FIELDWORK_SASL_PASSWORD_FILE"), ctx.SASL.PasswordFile),
		PasswordEnv:  ctx.SASL.PasswordEnv,

		TokenEnv:         ctx.SASL.TokenEnv,
		TokenFile:        first(fl.SASLTokenFile, getenv("FIELDWORK_SASL_TOKEN_FILE"), ctx.SASL.TokenFile),
		TokenURL:         first(fl.SASLTokenURL, getenv("FIELDWORK_SASL_TOKEN_URL"), ctx.SASL.TokenURL),
		ClientID:         first(fl.SASLClientID, getenv("FIELDWORK_SASL_CLIENT_ID"), ctx.SASL.ClientID),
		ClientSecretEnv:  ctx.SASL.ClientSecretEnv,
		ClientSecretFile: first(fl.SASLClientSecretFile, getenv("FIELDWORK_SASL_CLIENT_SECRET_FILE"), ctx.SASL.ClientSecretFile),
		Scope:            first(fl.SASLScope, getenv("FIELDWORK_SASL_SCOPE"), ctx.SASL.Scope),
	}
	if c.SASL.Mechanism != "" {
		if !validMechanism(c.SASL.Mechanism) {
			return c, fwerr.Usagef("unknown SASL mechanism %q (want one of %s)", c.SASL.Mechanism, strings.Join(Mechanisms, ", "))
		}
		if c.SASL.Mechanism == MechanismOAuthBearer {
			return c, resolveOAuth(&c, getenv)
		}
		if c.SASL.Username == "" {
			return c, fwerr.Usagef("SASL %s needs a username (--sasl-username or FIELDWORK_SASL_USERNAME)", c.SASL.Mechanism)
		}
		pw, err := readPassword(c.SASL, getenv)
		if err != nil {
			return c, err
		}
		c.Password = pw
	}
	return c, nil
}

// readPassword takes the password from, in order: FIELDWORK_SASL_PASSWORD, the password
// file (flag, environment or context), the context's password_env variable.
func readPassword(s SASL, getenv func(string) string) (string, error) {
	pw, err := readSecret("password", getenv("FIELDWORK_SASL_PASSWORD"), s.PasswordFile, s.PasswordEnv, getenv)
	if err == nil && pw == "" {
		err = fwerr.Usagef("SASL %s needs a password: set FIELDWORK_SASL_PASSWORD or --sasl-password-file", s.Mechanism)
	}
	return pw, err
}

// resolveOAuth reads what OAUTHBEARER needs: with a token URL, the client id and secret of
// the client-credentials grant; otherwise a static token, from FIELDWORK_SASL_TOKEN, the
// token file (flag, environment or context), or the context's token_env variable.
func resolveOAuth(c *Connection, getenv func(string) string) error {
	s := c.SASL
	if s.TokenURL == "" {
		tok, err := readSecret("OAUTHBEARER token", getenv("FIELDWORK_SASL_TOKEN"), s.TokenFile, s.TokenEnv, getenv)
		if err != nil {
			return err
		}
		if tok == "" {
			return fwerr.Usagef("SASL OAUTHBEARER needs a token (FIELDWORK_SASL_TOKEN or --sasl-token-file) or a token endpoint (--sasl-token-url, with --sasl-client-id and a client secret)")
		}
		c.Token = tok
		return nil
	}
	if s.ClientID == "" {
		return fwerr.Usagef("SASL OAUTHBEARER with a token URL needs a client id (--sasl-client-id or FIELDWORK_SASL_CLIENT_ID)")
	}
	secret, err := readSecret("OAUTHBEARER client secret", getenv("FIELDWORK_SASL_CLIENT_SECRET"), s.ClientSecretFile, s.ClientSecretEnv, getenv)
	if err != nil {
		return err
	}
	if secret == "" {
		return fwerr.Usagef("SASL OAUTHBEARER with a token URL needs a client secret (FIELDWORK_SASL_CLIENT_SECRET or --sasl-client-secret-file)")
	}
	c.ClientSecret = secret
	return nil
}

// readSecret takes a secret from, in order: the value of its FIELDWORK_ variable, a file, the
// variable a context names; "" when none is given. what names it in errors, which never hold
// the secret.
func readSecret(what, value, file, envName string, getenv func(string) string) (string, error) {
	if value != "" {
		return value, nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read SASL %s file: %w", what, err))
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fwerr.Usagef("SASL %s file %s is empty", what, file)
		}
		return v, nil
	}
	if envName != "" {
		if v := getenv(envName); v != "" {
			return v, nil
		}
		return "", fwerr.Usagef("SASL %s variable %s is not set", what, envName)
	}
	return "", nil
}

func validMechanism(m string) bool {
	for _, v := range Mechanisms {
		if v == m {
			return true
		}
	}
	return false
}

func known(f *File) string {
	if f == nil || len(f.Contexts) == 0 {
		return "none"
	}
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func envBool(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
