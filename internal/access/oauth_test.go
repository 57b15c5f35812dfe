package access

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// oauthArgs are the connection flags of an OAUTHBEARER principal on the secure listener.
func oauthArgs(p *testenv.Principal, more ...string) []string {
	return append([]string{"--brokers", p.Brokers, "--tls-ca", p.CAFile, "--sasl-mechanism", "OAUTHBEARER"}, more...)
}

// readable is a principal known by its token's sub claim, allowed to read w's topic.
func readable(t *testing.T, w world) *testenv.Principal {
	p := testenv.NewTokenPrincipal(t, "oauth")
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpDescribe, kadm.OpRead)
	return p
}

// TestOAuthStaticToken: a static token from the environment, a file, or a context's keys
// authenticates as its sub claim; a token the broker refuses is exit 4 and is never printed.
func TestOAuthStaticToken(t *testing.T) {
	w := cleanWorld(t)
	p := readable(t, w)
	token := testenv.UnsecuredJWT(p.Name, 10*time.Minute)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`contexts:
  secure:
    brokers: [`+p.Brokers+`]
    tls: {ca_file: `+p.CAFile+`}
    sasl: {mechanism: OAUTHBEARER, token_env: SECURE_KAFKA_TOKEN}
  secure-file:
    brokers: [`+p.Brokers+`]
    tls: {ca_file: `+p.CAFile+`}
    sasl: {mechanism: OAUTHBEARER, token_file: `+tokenFile+`}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	inspect := []string{"inspect", "topic", w.topic, "-o", "jsonl"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"env", []string{"FIELDWORK_SASL_TOKEN=" + token}, oauthArgs(p)},
		{"file", nil, oauthArgs(p, "--sasl-token-file", tokenFile)},
		{"context token_env", []string{"FIELDWORK_CONFIG=" + config, "SECURE_KAFKA_TOKEN=" + token}, []string{"--context", "secure"}},
		{"context token_file", []string{"FIELDWORK_CONFIG=" + config}, []string{"--context", "secure-file"}},
	} {
		r := run(t, c.env, append(inspect, c.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, `"records":`+itoa(w.records)) {
			t.Errorf("%s: want exit 0 and the topic\n%s", c.name, r)
		}
	}
	// The principal is the token's sub: another sub has no ACL.
	other := testenv.UnsecuredJWT(p.Name+"-other", 10*time.Minute)
	denied(t, run(t, []string{"FIELDWORK_SASL_TOKEN=" + other}, append(inspect, oauthArgs(p)...)...), "DESCRIBE on topic "+w.topic)

	for name, bad := range map[string]string{
		"expired":   testenv.UnsecuredJWT(p.Name, -time.Minute),
		"not a JWT": "fieldwork-not-a-token-" + p.Name,
	} {
		r := run(t, []string{"FIELDWORK_SASL_TOKEN=" + bad}, append(inspect, oauthArgs(p)...)...)
		if r.code != 4 || !strings.Contains(r.stderr, "cannot authenticate") {
			t.Errorf("%s token: want exit 4, cannot authenticate\n%s", name, r)
		}
		if strings.Contains(r.stdout+r.stderr, bad) {
			t.Errorf("%s token: the token is printed\n%s", name, r)
		}
	}
}

// tokenEndpoint is an OAuth 2 token endpoint of the client-credentials grant that issues
// unsecured JWTs for one client, with the sub claim sub, and counts what it is asked.
type tokenEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	issued   int
	refused  int
	scopes   []string
	clientID string
	secret   string
	sub      string
}

func newTokenEndpoint(t *testing.T, clientID, secret, sub string) *tokenEndpoint {
	e := &tokenEndpoint{clientID: clientID, secret: secret, sub: sub}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *tokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if r.Method != http.MethodPost || r.PostFormValue("grant_type") != "client_credentials" || id != e.clientID || secret != e.secret {
		e.refused++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	e.issued++
	e.scopes = append(e.scopes, r.PostFormValue("scope"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": testenv.UnsecuredJWT(e.sub, 10*time.Minute), "token_type": "bearer", "expires_in": 600,
	})
}

func (e *tokenEndpoint) counts() (issued, refused int, scopes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.issued, e.refused, append([]string(nil), e.scopes...)
}

// TestOAuthClientCredentials: tokens fetched from a token endpoint with the client id and
// secret (from the environment, a file or a context) authenticate; a wrong secret is exit 4
// and is never printed.
func TestOAuthClientCredentials(t *testing.T) {
	w := cleanWorld(t)
	p := readable(t, w)
	secret := "fieldwork-client-secret-" + p.Name
	ep := newTokenEndpoint(t, "fieldwork-cli", secret, p.Name)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`contexts:
  idp:
    brokers: [`+p.Brokers+`]
    tls: {ca_file: `+p.CAFile+`}
    sasl: {mechanism: OAUTHBEARER, token_url: `+ep.URL+`/token, client_id: fieldwork-cli, client_secret_file: `+secretFile+`, scope: kafka}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	inspect := []string{"inspect", "topic", w.topic, "-o", "jsonl"}
	flags := oauthArgs(p, "--sasl-token-url", ep.URL+"/token", "--sasl-client-id", "fieldwork-cli", "--sasl-scope", "kafka.read kafka.describe")
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"env secret", []string{"FIELDWORK_SASL_CLIENT_SECRET=" + secret}, flags},
		{"secret file", nil, append(flags, "--sasl-client-secret-file", secretFile)},
		{"context", []string{"FIELDWORK_CONFIG=" + config}, []string{"--context", "idp"}},
	} {
		before, _, _ := ep.counts()
		r := run(t, c.env, append(inspect, c.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, `"records":`+itoa(w.records)) {
			t.Errorf("%s: want exit 0 and the topic\n%s", c.name, r)
		}
		if after, _, _ := ep.counts(); after == before {
			t.Errorf("%s: no token was fetched from the endpoint", c.name)
		}
	}
	if _, refused, scopes := ep.counts(); refused != 0 || len(scopes) == 0 || scopes[0] != "kafka.read kafka.describe" || scopes[len(scopes)-1] != "kafka" {
		t.Errorf("the endpoint refused %d requests and was asked for scopes %q", refused, scopes)
	}

	wrong := "fieldwork-wrong-secret-" + p.Name
	r := run(t, []string{"FIELDWORK_SASL_CLIENT_SECRET=" + wrong}, append(inspect, flags...)...)
	if r.code != 4 || !strings.Contains(r.stderr, "cannot authenticate") {
		t.Errorf("wrong secret: want exit 4, cannot authenticate\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, wrong) || strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("wrong secret: a secret is printed\n%s", r)
	}
}
