package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedence(t *testing.T) {
	file := &File{
		CurrentContext: "staging",
		Contexts: map[string]Context{
			"staging": {Brokers: []string{"ctx:9092"}, DSN: "sqlite:ctx.db"},
			"prod":    {Brokers: []string{"prod:9092"}, DSN: "postgres://prod"},
		},
	}
	cases := []struct {
		name    string
		flags   Flags
		env     map[string]string
		brokers []string
		dsn     string
		context string
	}{
		{"context only", Flags{}, nil, []string{"ctx:9092"}, "sqlite:ctx.db", "staging"},
		{"env beats context", Flags{}, map[string]string{"FIELDWORK_BROKERS": "env1:9092, env2:9092"}, []string{"env1:9092", "env2:9092"}, "sqlite:ctx.db", "staging"},
		{"flag beats env", Flags{Brokers: []string{"flag:9092"}, DSN: "sqlite:flag.db"}, map[string]string{"FIELDWORK_BROKERS": "env:9092", "FIELDWORK_DSN": "sqlite:env.db"}, []string{"flag:9092"}, "sqlite:flag.db", "staging"},
		{"env context", Flags{}, map[string]string{"FIELDWORK_CONTEXT": "prod"}, []string{"prod:9092"}, "postgres://prod", "prod"},
		{"flag context beats env context", Flags{Context: "staging"}, map[string]string{"FIELDWORK_CONTEXT": "prod"}, []string{"ctx:9092"}, "sqlite:ctx.db", "staging"},
	}
	for _, c := range cases {
		got, err := Resolve(c.flags, env(c.env), file)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Brokers, c.brokers) || got.DSN != c.dsn || got.Context != c.context {
			t.Errorf("%s: got brokers %v dsn %q context %q", c.name, got.Brokers, got.DSN, got.Context)
		}
	}
}

func TestUnknownContext(t *testing.T) {
	_, err := Resolve(Flags{Context: "nope"}, env(nil), &File{Contexts: map[string]Context{"a": {}}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "known: a") {
		t.Fatalf("err = %v", err)
	}
}

func TestSASLPassword(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(Flags{SASLMechanism: "scram-sha-256", SASLUsername: "u", SASLPasswordFile: pwFile}, env(nil), nil)
	if err != nil || c.Password != "from-file" || c.SASL.Mechanism != "SCRAM-SHA-256" {
		t.Fatalf("file: %+v %v", c, err)
	}
	c, err = Resolve(Flags{SASLMechanism: "PLAIN", SASLUsername: "u"}, env(map[string]string{"FIELDWORK_SASL_PASSWORD": "from-env"}), nil)
	if err != nil || c.Password != "from-env" {
		t.Fatalf("env: %+v %v", c, err)
	}
	file := &File{Contexts: map[string]Context{"x": {SASL: SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "MY_PW"}}}}
	c, err = Resolve(Flags{Context: "x"}, env(map[string]string{"MY_PW": "ctx-env"}), file)
	if err != nil || c.Password != "ctx-env" {
		t.Fatalf("context env: %+v %v", c, err)
	}
	if _, err = Resolve(Flags{SASLMechanism: "PLAIN", SASLUsername: "u"}, env(nil), nil); err == nil {
		t.Fatal("missing password accepted")
	}
	if _, err = Resolve(Flags{SASLMechanism: "GSSAPI", SASLUsername: "u"}, env(nil), nil); err == nil {
		t.Fatal("unknown mechanism accepted")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if f, err := Load(filepath.Join(dir, "missing.yaml")); err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(p, []byte("current_context: dev\ncontexts:\n  dev:\n    brokers: [127.0.0.1:9092]\n    dsn: sqlite:dev.db\n    tls: {ca_file: /ca.pem}\n"), 0o600)
	f, err := Load(p)
	if err != nil || f.CurrentContext != "dev" || f.Contexts["dev"].TLS.CAFile != "/ca.pem" {
		t.Fatalf("load: %+v %v", f, err)
	}
	_ = os.WriteFile(p, []byte("contexts:\n  dev:\n    brokerz: [x]\n"), 0o600)
	if _, err := Load(p); err == nil {
		t.Fatal("unknown field accepted")
	}
	// A secret written into the file is refused, unshown, with where it goes instead.
	_ = os.WriteFile(p, []byte("contexts:\n  dev:\n    sasl: {mechanism: PLAIN, username: u, password: hunter2}\n    schema_registry: {url: http://r, token: tok3n}\n"), 0o600)
	_, err = Load(p)
	for _, want := range []string{"line 3: field password not found in type config.SASL: a secret is never written in the config file; name where it is read from with password_env",
		"line 4: field token not found in type config.SchemaRegistry: a secret is never written in the config file; name where it is read from with token_env or token_file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("secret in the file: %v, want %q", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tok3n")) {
		t.Errorf("the error shows the secret: %v", err)
	}
	_ = os.WriteFile(p, nil, 0o600)
	if _, err := Load(p); err != nil {
		t.Fatalf("empty file: %v", err)
	}
	if got := DefaultPath(env(map[string]string{"XDG_CONFIG_HOME": "/x"})); got != "/x/fieldwork/config.yaml" {
		t.Errorf("DefaultPath = %s", got)
	}
}

func TestSASLOAuthBearer(t *testing.T) {
	dir := t.TempDir()
	tokFile, secretFile := filepath.Join(dir, "tok"), filepath.Join(dir, "secret")
	for name, v := range map[string]string{tokFile: "tok-from-file\n", secretFile: "secret-from-file\n"} {
		if err := os.WriteFile(name, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := &File{Contexts: map[string]Context{
		"static": {SASL: SASL{Mechanism: "OAUTHBEARER", TokenEnv: "MY_TOKEN"}},
		"idp":    {SASL: SASL{Mechanism: "oauthbearer", TokenURL: "https://idp/token", ClientID: "cli", ClientSecretEnv: "MY_SECRET", Scope: "kafka"}},
	}}
	for _, c := range []struct {
		name          string
		flags         Flags
		env           map[string]string
		token, secret string
	}{
		{"token from env", Flags{SASLMechanism: "OAUTHBEARER"}, map[string]string{"FIELDWORK_SASL_TOKEN": "tok-env", "FIELDWORK_SASL_TOKEN_FILE": tokFile}, "tok-env", ""},
		{"token file", Flags{SASLMechanism: "OAUTHBEARER", SASLTokenFile: tokFile}, nil, "tok-from-file", ""},
		{"token file from env", Flags{SASLMechanism: "OAUTHBEARER"}, map[string]string{"FIELDWORK_SASL_TOKEN_FILE": tokFile}, "tok-from-file", ""},
		{"context token_env", Flags{Context: "static"}, map[string]string{"MY_TOKEN": "tok-ctx"}, "tok-ctx", ""},
		{"client credentials", Flags{SASLMechanism: "OAUTHBEARER", SASLTokenURL: "https://idp/t", SASLClientID: "c", SASLClientSecretFile: secretFile}, nil, "", "secret-from-file"},
		{"context client credentials", Flags{Context: "idp"}, map[string]string{"MY_SECRET": "secret-ctx"}, "", "secret-ctx"},
		{"secret env beats context", Flags{Context: "idp"}, map[string]string{"MY_SECRET": "secret-ctx", "FIELDWORK_SASL_CLIENT_SECRET": "secret-env"}, "", "secret-env"},
	} {
		got, err := Resolve(c.flags, env(c.env), file)
		if err != nil || got.Token != c.token || got.ClientSecret != c.secret || got.SASL.Mechanism != MechanismOAuthBearer {
			t.Errorf("%s: token %q secret %q mechanism %q, err %v", c.name, got.Token, got.ClientSecret, got.SASL.Mechanism, err)
		}
	}
	for name, fl := range map[string]Flags{
		"no token":     {SASLMechanism: "OAUTHBEARER"},
		"no client id": {SASLMechanism: "OAUTHBEARER", SASLTokenURL: "https://idp/t", SASLClientSecretFile: secretFile},
		"no secret":    {SASLMechanism: "OAUTHBEARER", SASLTokenURL: "https://idp/t", SASLClientID: "c"},
	} {
		if _, err := Resolve(fl, env(nil), nil); err == nil || !strings.Contains(err.Error(), "OAUTHBEARER") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := Resolve(Flags{Context: "static"}, env(nil), file); err == nil || !strings.Contains(err.Error(), "MY_TOKEN is not set") {
		t.Errorf("unset token_env: err = %v", err)
	}
}

func TestStorePassword(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pgpw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := &File{Contexts: map[string]Context{
		"env":      {DSN: "postgres://fw@db/app", DSNPasswordEnv: "APP_DB_PASSWORD"},
		"file":     {DSN: "host=db user=fw", DSNPasswordFile: pwFile},
		"in-dsn":   {DSN: "postgres://fw:own@db/app", DSNPasswordEnv: "APP_DB_PASSWORD"},
		"unset":    {DSN: "postgres://fw@db/app", DSNPasswordEnv: "NOT_SET"},
		"no-store": {},
	}}
	for ctx, want := range map[string]string{"env": "from-env", "file": "from-file", "in-dsn": "", "no-store": ""} {
		c, err := Resolve(Flags{Context: ctx}, env(map[string]string{"APP_DB_PASSWORD": "from-env"}), file)
		if err != nil || c.DSNPassword != want {
			t.Errorf("%s: password %q, err %v; want %q", ctx, c.DSNPassword, err, want)
		}
	}
	if _, err := Resolve(Flags{Context: "unset"}, env(nil), file); err == nil || !strings.Contains(err.Error(), "NOT_SET") {
		t.Errorf("unset variable: %v", err)
	}
}

func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	closed := filepath.Join(dir, "closed")
	if err := os.WriteFile(open, []byte("Open-Secret-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(closed, []byte("Closed-Secret-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	has := func(ws []string, part string) bool {
		for _, w := range ws {
			if strings.Contains(w, part) {
				return true
			}
		}
		return false
	}
	cases := []struct {
		name  string
		flags Flags
		env   map[string]string
		warn  string // "" for none
	}{
		{"password in --dsn", Flags{DSN: "postgres://u:Flag-Pw-3@h/db"}, nil, "process list (ps)"},
		{"password in --dsn, key=value", Flags{DSN: "host=h password=Flag-Pw-3"}, nil, "process list (ps)"},
		{"password in FIELDWORK_DSN", Flags{}, map[string]string{"FIELDWORK_DSN": "postgres://u:Env-Pw-4@h/db"}, ""},
		{"--dsn without a password", Flags{DSN: "postgres://u@h/db"}, nil, ""},
		{"open SASL password file", Flags{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "u", SASLPasswordFile: open, TLS: true}, nil, "SASL password file " + open + " can be read by every local user (mode 0644)"},
		{"closed SASL password file", Flags{SASLMechanism: "SCRAM-SHA-512", SASLUsername: "u", SASLPasswordFile: closed, TLS: true}, nil, ""},
		{"PLAIN without TLS", Flags{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPasswordFile: closed}, nil, "without TLS sends the credentials in the clear"},
		{"PLAIN with TLS", Flags{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPasswordFile: closed, TLS: true}, nil, ""},
		{"insecure TLS", Flags{TLSInsecure: true}, nil, "verification is off"},
		{"open key file", Flags{TLSCertFile: closed, TLSKeyFile: open}, nil, "TLS client key " + open},
		{"open key password file", Flags{TLSCertFile: closed, TLSKeyFile: closed, TLSKeyPasswordFile: open}, nil, "TLS key password file " + open},
		{"open PKCS#12 bundle", Flags{TLSPKCS12File: open}, nil, "PKCS#12 bundle " + open},
		{"open bundle behind --tls-cert", Flags{TLSCertFile: open}, nil, "PKCS#12 bundle " + open},
		{"open certificate beside its key", Flags{TLSCertFile: open, TLSKeyFile: closed}, nil, ""},
	}
	for _, c := range cases {
		conn, err := Resolve(c.flags, env(c.env), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.warn == "" && len(conn.Warnings) > 0 || c.warn != "" && !has(conn.Warnings, c.warn) {
			t.Errorf("%s: warnings %q, want %q", c.name, conn.Warnings, c.warn)
		}
		for _, pw := range []string{"Flag-Pw-3", "Env-Pw-4", "Open-Secret-1", "Closed-Secret-2"} {
			if has(conn.Warnings, pw) {
				t.Errorf("%s: a warning shows a password: %q", c.name, conn.Warnings)
			}
		}
	}

	// A config file others can read is worth a warning only when it holds a password.
	cfg := filepath.Join(dir, "config.yaml")
	for content, warn := range map[string]bool{
		"contexts:\n  a:\n    dsn: postgres://u:File-Pw-5@h/db\n": true,
		"contexts:\n  a:\n    dsn: postgres://u@h/db\n":           false,
	} {
		if err := os.WriteFile(cfg, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		f, err := Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := has(f.Warnings, "config file "+cfg+" can be read by its group (mode 0640)"); got != warn || has(f.Warnings, "File-Pw-5") {
			t.Errorf("config file %q: warnings %q", content, f.Warnings)
		}
	}
}

func TestSchemaRegistry(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := &File{CurrentContext: "c", Contexts: map[string]Context{"c": {SchemaRegistry: SchemaRegistry{
		URL: "https://ctx-registry:8081", Username: "ctx-user", PasswordEnv: "CTX_REGISTRY_PW", TLS: TLS{CAFile: "/ctx/ca.pem"},
	}}}}
	cases := []struct {
		name          string
		flags         Flags
		env           map[string]string
		url, user, pw string
		token, ca     string
		err           string
	}{
		{"context", Flags{}, map[string]string{"CTX_REGISTRY_PW": "ctx-secret"}, "https://ctx-registry:8081", "ctx-user", "ctx-secret", "", "/ctx/ca.pem", ""},
		{"env beats context", Flags{}, map[string]string{"FIELDWORK_SCHEMA_REGISTRY": "http://env:8081", "FIELDWORK_SCHEMA_REGISTRY_USERNAME": "env-user",
			"FIELDWORK_SCHEMA_REGISTRY_PASSWORD": "env-secret", "FIELDWORK_SCHEMA_REGISTRY_CA": "/env/ca.pem"}, "http://env:8081", "env-user", "env-secret", "", "/env/ca.pem", ""},
		{"flag beats env; password file", Flags{SchemaRegistry: "http://flag:8081", SchemaRegistryPasswordFile: pwFile},
			map[string]string{"FIELDWORK_SCHEMA_REGISTRY": "http://env:8081"}, "http://flag:8081", "ctx-user", "file-secret", "", "/ctx/ca.pem", ""},
		{"no password", Flags{}, nil, "", "", "", "", "", "schema registry password variable CTX_REGISTRY_PW is not set"},
		{"password in the URL", Flags{SchemaRegistry: "https://u:hunter2@reg:8081"}, map[string]string{"CTX_REGISTRY_PW": "x"}, "", "", "", "", "", "holds a password"},
	}
	for _, c := range cases {
		got, err := Resolve(c.flags, env(c.env), file)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: error %v, want %q (and no password)", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := got.Registry
		if r.URL != c.url || r.Username != c.user || got.RegistryPassword != c.pw || got.RegistryToken != c.token || r.TLS.CAFile != c.ca {
			t.Errorf("%s: %+v password %q token %q", c.name, r, got.RegistryPassword, got.RegistryToken)
		}
	}
	// A bearer token when no user is named.
	got, err := Resolve(Flags{SchemaRegistry: "http://reg:8081"}, env(map[string]string{"FIELDWORK_SCHEMA_REGISTRY_TOKEN": "tok"}), nil)
	if err != nil || got.RegistryToken != "tok" || got.RegistryPassword != "" {
		t.Fatalf("token: %+v %v", got, err)
	}
	if ctx := file.Contexts["c"]; ctx.Redacted().SchemaRegistry.URL != "https://ctx-registry:8081" {
		t.Fatalf("redacted: %+v", ctx.Redacted().SchemaRegistry)
	}
}

// TestUseKeepsTheFile: context use changes the current_context value and nothing else, byte for
// byte (a file kept in git shows one changed line), whatever its indentation, quoting and
// comments; a file without the key gets it as its first line.
func TestUseKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	body := "contexts:\n  # the laptop\n  local:\n    brokers: [127.0.0.1:9092]\n  'prod eu':\n    brokers: [\"k1:9092\", k2:9092]   # two\n"
	for _, c := range []struct {
		name, before, use, after string
	}{
		{"plain", "# owned by SRE\ncurrent_context: local   # default\n" + body, "prod eu",
			"# owned by SRE\ncurrent_context: prod eu   # default\n" + body},
		{"double-quoted", "current_context: \"local\"\n" + body, "prod eu", "current_context: prod eu\n" + body},
		{"single-quoted", "current_context: 'it''s'\n" + body, "local", "current_context: local\n" + body},
		{"missing", body, "local", "current_context: local\n" + body},
	} {
		if err := os.WriteFile(p, []byte(c.before), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Use(p, c.use); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != c.after {
			t.Errorf("%s: the file became\n%s\nwant\n%s", c.name, got, c.after)
		}
		f, err := Load(p)
		if err != nil || f.CurrentContext != c.use {
			t.Errorf("%s: current_context %q, %v", c.name, f.CurrentContext, err)
		}
	}
}
