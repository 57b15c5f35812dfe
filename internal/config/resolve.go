package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// Flags are the connection values given on the command line. Empty means "not given".
type Flags struct {
	Brokers []string
	Context string
	DSN     string

	TLS                bool
	TLSCAFile          string
	TLSCertFile        string
	TLSKeyFile         string
	TLSPKCS12File      string
	TLSKeyPasswordFile string
	TLSServerName      string
	TLSInsecure        bool
	SASLMechanism      string
	SASLUsername       string
	SASLPasswordFile   string

	SASLTokenFile        string
	SASLTokenURL         string
	SASLClientID         string
	SASLClientSecretFile string
	SASLScope            string

	// The schema registry (docs/design.md §3.6).
	SchemaRegistry             string
	SchemaRegistryUsername     string
	SchemaRegistryPasswordFile string
	SchemaRegistryTokenFile    string
	SchemaRegistryCAFile       string
	SchemaRegistryInsecure     bool
}

// Connection is the resolved place fieldwork connects to.
type Connection struct {
	Context     string // the context used, "" when none
	Brokers     []string
	DSN         string
	TLS         TLS
	SASL        SASL
	Password    string `json:"-"` // the SASL password, resolved; never printed
	KeyPassword string `json:"-"` // the TLS client key's or bundle's password; never printed
	DSNPassword string `json:"-"` // the store's password when the DSN holds none; never printed
	// Token is the static OAUTHBEARER token, ClientSecret the client-credentials secret,
	// resolved; never printed.
	Token        string `json:"-"`
	ClientSecret string `json:"-"`

	// Registry is the schema registry ("" URL: none); RegistryPassword and RegistryToken its
	// basic-auth password and bearer token, resolved; never printed.
	Registry         SchemaRegistry
	RegistryPassword string `json:"-"`
	RegistryToken    string `json:"-"`
	// DLQPattern finds the dead-letter topics when a dlq command names none:
	// FIELDWORK_DLQ_PATTERN, else the context's dlq_pattern; "" for the default.
	// DLQPatternFrom says which ("FIELDWORK_DLQ_PATTERN", "context NAME").
	DLQPattern, DLQPatternFrom string

	// Warnings are facts about how the secrets were given that the operator should hear
	// (docs/design.md §4.2): the command prints them once, on stderr.
	Warnings []string `json:"-"`
}

// MechanismAWSMSKIAM is AWS MSK's IAM mechanism, signed with AWS credentials.
const MechanismAWSMSKIAM = "AWS_MSK_IAM"

// MechanismOAuthBearer is SASL/OAUTHBEARER (RFC 7628): a bearer token, static or fetched from
// a token endpoint.
const MechanismOAuthBearer = "OAUTHBEARER"

// Mechanisms are the accepted SASL mechanisms.
var Mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", MechanismOAuthBearer, MechanismAWSMSKIAM}

// Resolve merges flags, environment and the config file. getenv is os.Getenv in production.
// It fails, with a usage error, when a named context does not exist, a SASL mechanism is
// unknown, or a password is needed and cannot be read.
func Resolve(fl Flags, getenv func(string) string, file *File) (Connection, error) {
	var c Connection
	name, _ := Current(fl, getenv, file)
	var ctx Context
	if name != "" {
		var err error
		if ctx, err = file.Lookup(name, "the config file"); err != nil {
			return c, err
		}
		c.Context = name
	}
	if err := c.resolvePlaces(fl, getenv, file, ctx); err != nil {
		return c, err
	}
	if err := c.resolveTLS(fl, getenv, ctx.TLS); err != nil {
		return c, err
	}
	if err := c.resolveSASL(fl, getenv, ctx.SASL); err != nil {
		return c, err
	}
	if err := c.resolveRegistry(fl, getenv, ctx.SchemaRegistry); err != nil {
		return c, err
	}
	if (c.SASL.Mechanism == "PLAIN" || c.SASL.Mechanism == MechanismOAuthBearer || c.SASL.Mechanism == MechanismAWSMSKIAM) && !c.TLS.Enabled {
		c.Warnings = append(c.Warnings, "SASL "+c.SASL.Mechanism+" without TLS sends the credentials in the clear: add --tls (and --tls-ca)")
	}
	return c, nil
}

// resolvePlaces reads where fieldwork connects (the brokers, the store's DSN and its password,
// the dead-letter pattern), flag, then environment, then the context ctx, and carries the
// config file's warnings over.
func (c *Connection) resolvePlaces(fl Flags, getenv func(string) string, file *File, ctx Context) error {
	c.Brokers = fl.Brokers
	if len(c.Brokers) == 0 {
		c.Brokers = splitList(getenv("FIELDWORK_BROKERS"))
	}
	if len(c.Brokers) == 0 {
		c.Brokers = ctx.Brokers
	}
	c.DSN = first(fl.DSN, getenv("FIELDWORK_DSN"), ctx.DSN)
	switch {
	case getenv("FIELDWORK_DLQ_PATTERN") != "":
		c.DLQPattern, c.DLQPatternFrom = getenv("FIELDWORK_DLQ_PATTERN"), "FIELDWORK_DLQ_PATTERN"
	case ctx.DLQPattern != "":
		c.DLQPattern, c.DLQPatternFrom = ctx.DLQPattern, "context "+c.Context
	}
	if file != nil {
		c.Warnings = append(c.Warnings, file.Warnings...)
	}
	if fl.DSN != "" && len(redact.Secrets(fl.DSN)) > 0 {
		c.Warnings = append(c.Warnings, "the --dsn value holds a password, which every local user can read in the process list (ps): "+
			"give the DSN without it and the password through PGPASSFILE, or a context's dsn_password_env or dsn_password_file, or set FIELDWORK_DSN")
	}
	if len(redact.Secrets(c.DSN)) == 0 {
		pw, from, err := secret(getenv, "", ctx.DSNPasswordFile, ctx.DSNPasswordEnv, "store password", "")
		if err != nil {
			return err
		}
		c.DSNPassword = pw
		c.warnExposed("store password file", from)
	}
	return nil
}

// resolveTLS reads the TLS settings, flag, then environment, then the context's ctx, refuses
// a client key or bundle given inconsistently, and reads the key's password.
func (c *Connection) resolveTLS(fl Flags, getenv func(string) string, ctx TLS) error {
	c.TLS = TLS{
		Enabled:            fl.TLS || envBool(getenv("FIELDWORK_TLS")) || ctx.Enabled,
		CAFile:             first(fl.TLSCAFile, getenv("FIELDWORK_TLS_CA"), ctx.CAFile),
		CertFile:           first(fl.TLSCertFile, getenv("FIELDWORK_TLS_CERT"), ctx.CertFile),
		KeyFile:            first(fl.TLSKeyFile, getenv("FIELDWORK_TLS_KEY"), ctx.KeyFile),
		PKCS12File:         first(fl.TLSPKCS12File, getenv("FIELDWORK_TLS_PKCS12"), ctx.PKCS12File),
		KeyPasswordFile:    first(fl.TLSKeyPasswordFile, getenv("FIELDWORK_TLS_KEY_PASSWORD_FILE"), ctx.KeyPasswordFile),
		KeyPasswordEnv:     ctx.KeyPasswordEnv,
		ServerName:         first(fl.TLSServerName, getenv("FIELDWORK_TLS_SERVER_NAME"), ctx.ServerName),
		InsecureSkipVerify: fl.TLSInsecure || envBool(getenv("FIELDWORK_TLS_INSECURE_SKIP_VERIFY")) || ctx.InsecureSkipVerify,
	}
	// Any TLS file implies TLS.
	if c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.KeyFile != "" || c.TLS.PKCS12File != "" {
		c.TLS.Enabled = true
	}
	switch {
	case c.TLS.PKCS12File != "" && (c.TLS.CertFile != "" || c.TLS.KeyFile != ""):
		return fwerr.Usagef("a PKCS#12 bundle (--tls-pkcs12) holds the client certificate and key: give it without --tls-cert and --tls-key")
	case c.TLS.KeyFile != "" && c.TLS.CertFile == "":
		return fwerr.Usagef("a TLS client key needs its certificate (--tls-cert)")
	}
	// A PEM certificate without --tls-key is refused when it is loaded; a file that is not PEM
	// is read as a PKCS#12 bundle.
	if c.TLS.CertFile != "" || c.TLS.PKCS12File != "" {
		pw, from, err := secret(getenv, "FIELDWORK_TLS_KEY_PASSWORD", c.TLS.KeyPasswordFile, c.TLS.KeyPasswordEnv, "TLS key password", "")
		if err != nil {
			return err
		}
		c.KeyPassword = pw
		c.warnExposed("TLS key password file", from)
		c.warnExposed("TLS client key", c.TLS.KeyFile)
		if c.TLS.KeyFile == "" { // the bundle holds the key; a PEM certificate beside its key is public
			c.warnExposed("PKCS#12 bundle", first(c.TLS.PKCS12File, c.TLS.CertFile))
		}
	}
	if c.TLS.InsecureSkipVerify {
		c.Warnings = append(c.Warnings, "TLS certificate verification is off (--tls-insecure-skip-verify): anyone on the path can pose as the brokers and read the credentials")
	}
	return nil
}

// resolveSASL reads the SASL settings, flag, then environment, then the context's ctx,
// refuses an unknown mechanism, and reads what the mechanism needs (password, token or
// client secret).
func (c *Connection) resolveSASL(fl Flags, getenv func(string) string, ctx SASL) error {
	c.SASL = SASL{
		Mechanism:    strings.ToUpper(first(fl.SASLMechanism, getenv("FIELDWORK_SASL_MECHANISM"), ctx.Mechanism)),
		Username:     first(fl.SASLUsername, getenv("FIELDWORK_SASL_USERNAME"), ctx.Username),
		PasswordFile: first(fl.SASLPasswordFile, getenv("FIELDWORK_SASL_PASSWORD_FILE"), ctx.PasswordFile),
		PasswordEnv:  ctx.PasswordEnv,

		TokenEnv:         ctx.TokenEnv,
		TokenFile:        first(fl.SASLTokenFile, getenv("FIELDWORK_SASL_TOKEN_FILE"), ctx.TokenFile),
		TokenURL:         first(fl.SASLTokenURL, getenv("FIELDWORK_SASL_TOKEN_URL"), ctx.TokenURL),
		ClientID:         first(fl.SASLClientID, getenv("FIELDWORK_SASL_CLIENT_ID"), ctx.ClientID),
		ClientSecretEnv:  ctx.ClientSecretEnv,
		ClientSecretFile: first(fl.SASLClientSecretFile, getenv("FIELDWORK_SASL_CLIENT_SECRET_FILE"), ctx.ClientSecretFile),
		Scope:            first(fl.SASLScope, getenv("FIELDWORK_SASL_SCOPE"), ctx.Scope),
	}
	switch m := c.SASL.Mechanism; {
	case m == "":
	case !validMechanism(m):
		return fwerr.Usagef("unknown SASL mechanism %q (want one of %s)", m, strings.Join(Mechanisms, ", "))
	case m == MechanismOAuthBearer:
		return c.resolveOAuth(getenv)
	case m == MechanismAWSMSKIAM:
		// Signed with AWS credentials from the AWS SDK's default chain, read when connecting.
	case c.SASL.Username == "":
		return fwerr.Usagef("SASL %s needs a username (--sasl-username or FIELDWORK_SASL_USERNAME)", m)
	default:
		pw, from, err := secret(getenv, "FIELDWORK_SASL_PASSWORD", c.SASL.PasswordFile, c.SASL.PasswordEnv, "SASL password",
			"SASL "+m+" needs a password: set FIELDWORK_SASL_PASSWORD or --sasl-password-file")
		if err != nil {
			return err
		}
		c.Password = pw
		c.warnExposed("SASL password file", from)
	}
	return nil
}

// resolveOAuth reads what OAUTHBEARER needs: with a token URL, the client id and secret of
// the client-credentials grant; otherwise a static token, from FIELDWORK_SASL_TOKEN, the
// token file (flag, environment or context), or the context's token_env variable.
func (c *Connection) resolveOAuth(getenv func(string) string) error {
	s := c.SASL
	if s.TokenURL == "" {
		tok, from, err := secret(getenv, "FIELDWORK_SASL_TOKEN", s.TokenFile, s.TokenEnv, "SASL OAUTHBEARER token",
			"SASL OAUTHBEARER needs a token (FIELDWORK_SASL_TOKEN or --sasl-token-file) or a token endpoint (--sasl-token-url, with --sasl-client-id and a client secret)")
		if err != nil {
			return err
		}
		c.Token = tok
		c.warnExposed("SASL OAUTHBEARER token file", from)
		return nil
	}
	if s.ClientID == "" {
		return fwerr.Usagef("SASL OAUTHBEARER with a token URL needs a client id (--sasl-client-id or FIELDWORK_SASL_CLIENT_ID)")
	}
	sec, from, err := secret(getenv, "FIELDWORK_SASL_CLIENT_SECRET", s.ClientSecretFile, s.ClientSecretEnv, "SASL OAUTHBEARER client secret",
		"SASL OAUTHBEARER with a token URL needs a client secret (FIELDWORK_SASL_CLIENT_SECRET or --sasl-client-secret-file)")
	if err != nil {
		return err
	}
	c.ClientSecret = sec
	c.warnExposed("SASL OAUTHBEARER client secret file", from)
	return nil
}

// resolveRegistry reads the schema registry's settings: flag, then environment, then context.
// A URL holding a password is refused (it would be shown in the process list and in errors);
// the password comes from FIELDWORK_SCHEMA_REGISTRY_PASSWORD, a file or the context's variable,
// the bearer token from FIELDWORK_SCHEMA_REGISTRY_TOKEN, a file or the context's variable.
func (c *Connection) resolveRegistry(fl Flags, getenv func(string) string, ctx SchemaRegistry) error {
	r := SchemaRegistry{
		URL:          first(fl.SchemaRegistry, getenv("FIELDWORK_SCHEMA_REGISTRY"), ctx.URL),
		Username:     first(fl.SchemaRegistryUsername, getenv("FIELDWORK_SCHEMA_REGISTRY_USERNAME"), ctx.Username),
		PasswordEnv:  ctx.PasswordEnv,
		PasswordFile: first(fl.SchemaRegistryPasswordFile, getenv("FIELDWORK_SCHEMA_REGISTRY_PASSWORD_FILE"), ctx.PasswordFile),
		TokenEnv:     ctx.TokenEnv,
		TokenFile:    first(fl.SchemaRegistryTokenFile, getenv("FIELDWORK_SCHEMA_REGISTRY_TOKEN_FILE"), ctx.TokenFile),
		TLS:          ctx.TLS,
	}
	r.TLS.CAFile = first(fl.SchemaRegistryCAFile, getenv("FIELDWORK_SCHEMA_REGISTRY_CA"), ctx.TLS.CAFile)
	r.TLS.InsecureSkipVerify = fl.SchemaRegistryInsecure || envBool(getenv("FIELDWORK_SCHEMA_REGISTRY_INSECURE_SKIP_VERIFY")) || ctx.TLS.InsecureSkipVerify
	c.Registry = r
	if r.URL == "" {
		return nil
	}
	if len(redact.Secrets(r.URL)) > 0 {
		return fwerr.Usagef("the schema registry URL %s holds a password: give the user with --schema-registry-username and the password through FIELDWORK_SCHEMA_REGISTRY_PASSWORD or --schema-registry-password-file", redact.URL(r.URL))
	}
	if r.TLS.InsecureSkipVerify {
		c.Warnings = append(c.Warnings, "TLS certificate verification of the schema registry is off: anyone on the path can pose as it and read its credentials")
	}
	if r.Username != "" {
		pw, from, err := secret(getenv, "FIELDWORK_SCHEMA_REGISTRY_PASSWORD", r.PasswordFile, r.PasswordEnv, "schema registry password",
			"the schema registry user "+r.Username+" needs a password: set FIELDWORK_SCHEMA_REGISTRY_PASSWORD or --schema-registry-password-file")
		if err != nil {
			return err
		}
		c.RegistryPassword = pw
		c.warnExposed("schema registry password file", from)
		return nil
	}
	tok, from, err := secret(getenv, "FIELDWORK_SCHEMA_REGISTRY_TOKEN", r.TokenFile, r.TokenEnv, "schema registry token", "")
	if err != nil {
		return err
	}
	c.RegistryToken = tok
	c.warnExposed("schema registry token file", from)
	return nil
}

func (c *Connection) warnExposed(what, path string) {
	if path == "" {
		return
	}
	if w := exposed(what, path); w != "" {
		c.Warnings = append(c.Warnings, w)
	}
}

// secret reads one secret from, in order: the environment variable envVar (when not ""), the
// file (flag, environment or context), the variable a context names (nameVar). It returns the
// file it read, for the permission check. Nothing found is "" unless missing is a message: then
// it is a usage error saying so.
func secret(getenv func(string) string, envVar, file, nameVar, what, missing string) (pw, from string, err error) {
	if envVar != "" {
		if pw := getenv(envVar); pw != "" {
			return pw, "", nil
		}
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", "", fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read %s file: %w", what, err))
		}
		pw := strings.TrimRight(string(b), "\r\n")
		if pw == "" {
			return "", "", fwerr.Usagef("%s file %s is empty", what, file)
		}
		return pw, file, nil
	}
	if nameVar != "" {
		if pw := getenv(nameVar); pw != "" {
			return pw, "", nil
		}
		return "", "", fwerr.Usagef("%s variable %s is not set", what, nameVar)
	}
	if missing != "" {
		return "", "", fwerr.Usagef("%s", missing)
	}
	return "", "", nil
}

func validMechanism(m string) bool {
	for _, v := range Mechanisms {
		if v == m {
			return true
		}
	}
	return false
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
