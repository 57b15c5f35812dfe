package config

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// The passwords FuzzConfig offers Resolve from every place one can come from. None may ever
// appear in an error.
const (
	fuzzEnvPassword  = "env-pw-7Hq2Xk9sLw" // FIELDWORK_SASL_PASSWORD
	fuzzFilePassword = "file-pw-R4nd0mZzQ" // the password file's content
	fuzzVarPassword  = "var-pw-Q8wLm3TtVb" // any variable a context's password_env names
	fuzzDSNPassword  = "dsn-pw-Kx81Wq0oPz" // in FIELDWORK_DSN
)

// dsnPassword finds the password of a URL-shaped DSN (scheme://user:password@host) written in
// a config file.
var dsnPassword = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:([^\s@/]+)@`)

// FuzzConfig loads arbitrary config files (seeds in testdata/fuzz/FuzzConfig) and resolves
// them with a context name and environment the fuzzer chooses. It asserts that neither Load
// nor Resolve panics, that every error is a usage error with a message, that no error holds a
// password (from the environment, a password file, a variable a context names, or a DSN in
// the file or the environment), and that a resolved SASL connection has a known mechanism, a
// username and a password.
func FuzzConfig(f *testing.F) {
	dir := f.TempDir()
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(fuzzFilePassword+"\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, nil, 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte, contextName string, env uint16) {
		for _, pw := range []string{fuzzEnvPassword, fuzzFilePassword, fuzzVarPassword, fuzzDSNPassword} {
			if bytes.Contains(doc, []byte(pw)) || strings.Contains(contextName, pw) {
				return // the fuzzer wrote the password itself where an error may quote it
			}
		}
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		secrets := []string{fuzzEnvPassword, fuzzFilePassword, fuzzVarPassword, fuzzDSNPassword}
		for _, m := range dsnPassword.FindAllSubmatch(doc, -1) {
			// A short password is too likely a word of the message itself.
			if pw := string(m[1]); len(pw) >= 8 && !strings.Contains(path, pw) {
				secrets = append(secrets, pw)
			}
		}
		checkErr := func(what string, err error) {
			t.Helper()
			// A wrong setting is a usage error; a context that is not defined is not found.
			if k := fwerr.KindOf(err); k != fwerr.KindUsage && k != fwerr.KindNotFound || strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("%s: error %q (kind %v) is not a usage or not-found error with a message", what, err, fwerr.KindOf(err))
			}
			for _, pw := range secrets {
				if strings.Contains(err.Error(), pw) {
					t.Fatalf("%s: error %q holds the password %q", what, err, pw)
				}
			}
		}

		file, err := Load(path)
		if err != nil {
			checkErr("Load", err)
			return
		}
		vars := map[string]string{}
		set := func(bit uint16, name, value string) {
			if env&bit != 0 {
				vars[name] = value
			}
		}
		set(1<<0, "FIELDWORK_SASL_PASSWORD", fuzzEnvPassword)
		set(1<<1, "FIELDWORK_SASL_PASSWORD_FILE", pwFile)
		set(1<<2, "FIELDWORK_SASL_PASSWORD_FILE", emptyFile)
		set(1<<3, "FIELDWORK_SASL_PASSWORD_FILE", filepath.Join(dir, "missing"))
		set(1<<4, "FIELDWORK_SASL_MECHANISM", "scram-sha-512")
		set(1<<5, "FIELDWORK_SASL_USERNAME", "oncall")
		set(1<<6, "FIELDWORK_BROKERS", "127.0.0.1:9092, ,127.0.0.2:9092")
		set(1<<7, "FIELDWORK_DSN", "postgres://fieldwork:"+fuzzDSNPassword+"@db:5432/orders")
		set(1<<8, "FIELDWORK_TLS_CERT", "/etc/fieldwork/client.pem")
		set(1<<9, "FIELDWORK_TLS_KEY", "/etc/fieldwork/client.key")
		set(1<<10, "FIELDWORK_CONTEXT", contextName)
		flags := Flags{}
		if env&(1<<11) != 0 {
			flags.Context = contextName
		}
		getenv := func(name string) string {
			if v, ok := vars[name]; ok {
				return v
			}
			if strings.HasPrefix(name, "FIELDWORK_") {
				return ""
			}
			return fuzzVarPassword // whatever variable a context's password_env names
		}

		conn, err := Resolve(flags, getenv, file)
		if err != nil {
			checkErr("Resolve", err)
			return
		}
		if conn.SASL.Mechanism == MechanismAWSMSKIAM || conn.SASL.Mechanism == MechanismOAuthBearer {
			if conn.Password != "" {
				t.Fatalf("%s with a password: %+v", conn.SASL.Mechanism, conn.SASL)
			}
			if conn.SASL.Mechanism == MechanismOAuthBearer && conn.Token == "" && conn.ClientSecret == "" {
				t.Fatalf("OAUTHBEARER with neither a token nor a client secret: %+v", conn.SASL)
			}
		} else if conn.SASL.Mechanism != "" {
			if !slices.Contains(Mechanisms, conn.SASL.Mechanism) || conn.SASL.Username == "" || conn.Password == "" {
				t.Fatalf("resolved SASL %+v with password set %v", conn.SASL, conn.Password != "")
			}
		} else if conn.Password != "" {
			t.Fatalf("a password without SASL: %+v", conn.SASL)
		}
		// A key needs its certificate; a certificate without a key is a PKCS#12 bundle or is
		// refused when it is loaded; a bundle goes alone.
		if conn.TLS.KeyFile != "" && conn.TLS.CertFile == "" || conn.TLS.PKCS12File != "" && conn.TLS.CertFile+conn.TLS.KeyFile != "" {
			t.Fatalf("TLS files that do not go together: %+v", conn.TLS)
		}
		for _, w := range conn.Warnings {
			for _, pw := range []string{fuzzEnvPassword, fuzzFilePassword, fuzzVarPassword, fuzzDSNPassword} {
				if strings.Contains(w, pw) {
					t.Fatalf("a warning shows a password: %s", w)
				}
			}
		}
	})
}
