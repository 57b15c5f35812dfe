package config

import (
	"fmt"
	"os"
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
}

// Connection is the resolved place fieldwork connects to.
type Connection struct {
	Context  string // the context used, "" when none
	Brokers  []string
	DSN      string
	TLS      TLS
	SASL     SASL
	Password string `json:"-"` // the SASL password, resolved; never printed
}

// Mechanisms are the accepted SASL mechanisms.
var Mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

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
	}
	if c.SASL.Mechanism != "" {
		if !validMechanism(c.SASL.Mechanism) {
			return c, fwerr.Usagef("unknown SASL mechanism %q (want one of %s)", c.SASL.Mechanism, strings.Join(Mechanisms, ", "))
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
	if pw := getenv("FIELDWORK_SASL_PASSWORD"); pw != "" {
		return pw, nil
	}
	if s.PasswordFile != "" {
		b, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return "", fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read SASL password file: %w", err))
		}
		pw := strings.TrimRight(string(b), "\r\n")
		if pw == "" {
			return "", fwerr.Usagef("SASL password file %s is empty", s.PasswordFile)
		}
		return pw, nil
	}
	if s.PasswordEnv != "" {
		if pw := getenv(s.PasswordEnv); pw != "" {
			return pw, nil
		}
		return "", fwerr.Usagef("SASL password variable %s is not set", s.PasswordEnv)
	}
	return "", fwerr.Usagef("SASL %s needs a password: set FIELDWORK_SASL_PASSWORD or --sasl-password-file", s.Mechanism)
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
