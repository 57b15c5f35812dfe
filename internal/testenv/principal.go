package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Principal is a SCRAM-SHA-512 user of the secure listener that exists for one test and holds
// exactly the ACLs the test grants it (none at first). The user and its ACLs are deleted at
// cleanup. They are administered through the PLAINTEXT listener, whose principal is a super
// user.
type Principal struct {
	Name     string // the SCRAM user name; the principal is "User:" + Name
	Password string
	Brokers  string // the SASL_SSL listener
	CAFile   string
	t        testing.TB
	adm      *kadm.Client
	scram    bool
}

// NewPrincipal creates a SCRAM-SHA-512 user of a name unique to the test (Name) and waits
// until the secure listener accepts its credentials.
func NewPrincipal(t testing.TB, prefix string) *Principal {
	t.Helper()
	brokers, _, _ := SecureBrokers(t)
	ca := CAFile(t)
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	p := &Principal{Name: Name(t, prefix), Password: hex.EncodeToString(secret), Brokers: brokers, CAFile: ca, t: t, adm: kadm.NewClient(Client(t))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: p.Name, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: p.Password}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create SCRAM user %s: %v", p.Name, err)
	}
	p.scram = true
	t.Cleanup(p.remove)
	p.waitAuthenticates(ctx)
	return p
}

// NewTokenPrincipal is a principal of a name unique to the test that exists only in ACLs:
// one authenticated by a token whose sub claim is Name (OAUTHBEARER, UnsecuredJWT). Its ACLs
// are deleted at cleanup.
func NewTokenPrincipal(t testing.TB, prefix string) *Principal {
	t.Helper()
	brokers, _, _ := SecureBrokers(t)
	ca := CAFile(t)
	p := &Principal{Name: Name(t, prefix), Brokers: brokers, CAFile: ca, t: t, adm: kadm.NewClient(Client(t))}
	t.Cleanup(p.remove)
	return p
}

// Principal is the principal's ACL name, "User:NAME".
func (p *Principal) Principal() string { return "User:" + p.Name }

// Allow grants ops on the literal resources b names (kadm.NewACLs().Topics(…), .Groups(…),
// .Clusters(), .TransactionalIDs(…)) and waits until the broker's authorizer holds them.
func (p *Principal) Allow(b *kadm.ACLBuilder, ops ...kadm.ACLOperation) {
	p.t.Helper()
	b = b.Allow(p.Principal()).AllowHosts("*").Operations(ops...).ResourcePatternType(kadm.ACLPatternLiteral)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.adm.CreateACLs(ctx, b)
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		p.t.Fatalf("create ACLs for %s: %v", p.Principal(), err)
	}
	// Wait until the broker's authorizer answers with the ACLs just made (the builder describes
	// exactly those): counting every ACL of the principal would count the ones granted before
	// and stop waiting at once.
	want := len(res)
	for {
		got, err := p.adm.DescribeACLs(ctx, b)
		n := 0
		if err == nil {
			for _, d := range got {
				n += len(d.Described)
			}
		}
		if n >= want {
			return
		}
		if ctx.Err() != nil {
			p.t.Fatalf("the ACLs of %s did not show within 30s (%d of %d; %v)", p.Principal(), n, want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Args are the connection flags of fieldwork for this principal; the password goes in Env.
func (p *Principal) Args() []string {
	return []string{"--brokers", p.Brokers, "--tls", "--tls-ca", p.CAFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", p.Name}
}

// Env is the environment that carries the principal's password to fieldwork.
func (p *Principal) Env() []string { return []string{"FIELDWORK_SASL_PASSWORD=" + p.Password} }

func (p *Principal) waitAuthenticates(ctx context.Context) {
	p.t.Helper()
	var last error
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Brokers), kgo.DialTLSConfig(TLSConfig(p.t, p.CAFile)),
			kgo.SASL(scram.Auth{User: p.Name, Pass: p.Password}.AsSha512Mechanism()))
		if err != nil {
			p.t.Fatal(err)
		}
		last = cl.Ping(ctx)
		cl.Close()
		if last == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("SCRAM user %s is not accepted by %s within 30s: %v", p.Name, p.Brokers, last)
}

func (p *Principal) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.adm.DeleteACLs(ctx, kadm.NewACLs().Allow(p.Principal()).AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil {
		p.t.Errorf("delete the ACLs of %s: %v", p.Principal(), err)
	}
	if !p.scram {
		return
	}
	if _, err := p.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: p.Name, Mechanism: kadm.ScramSha512}}, nil); err != nil {
		p.t.Errorf("delete SCRAM user %s: %v", p.Name, err)
	}
}

// UnsecuredJWT returns a token the broker's unsecured-JWS validator accepts for principal sub
// (Kafka's OAUTHBEARER default): header {"alg":"none"}, claims sub, iat and exp (ttl from now),
// and an empty signature.
func UnsecuredJWT(sub string, ttl time.Duration) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	return strings.Join([]string{enc(map[string]string{"alg": "none"}), enc(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}), ""}, ".")
}

// TLSConfig trusts the certificates caFile holds (the services' CA).
func TLSConfig(t testing.TB, caFile string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
