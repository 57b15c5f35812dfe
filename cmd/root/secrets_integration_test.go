package root_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// notRun are the commands the leak test runs only with --help, and why.
var notRun = map[string]string{
	"fieldwork dev":  "serves an in-process broker until interrupted; it reads no connection setting but --dsn sqlite:PATH",
	"fieldwork demo": "runs its own in-process broker and SQLite store; it reads no connection setting",
}

// TestNoSecretLeaks sets distinctive secrets in every place one can come from — the store's
// password (in the DSN, and apart from it through a context's dsn_password_env), the SASL
// password (environment and file), the TLS key password (an encrypted PKCS#8 key and a PKCS#12
// bundle), the AWS secret key and session token, the webhook URL's user info and token — then runs every command of the tree, every
// --help, and every failure it can provoke (malformed DSNs of every form, wrong passwords
// against the real PostgreSQL, the SASL_SSL listener and an encrypted key, unreachable hosts,
// webhook failures that consume dead-letters), against the real services. It then reads back
// the dead letters from Kafka (values and headers) and every table of the store's schema, and
// asserts that no secret appears in any output, log line, header or row.
func TestNoSecretLeaks(t *testing.T) {
	ctx := context.Background()
	secureAddr, _, _ := testenv.SecureBrokers(t)
	mtlsAddr, ca, adminDSN := testenv.MTLSBrokers(t), testenv.CAFile(t), testenv.DSN(t)
	suffix := randomHex(t)
	secret := map[string]string{
		"store password":       "DsnPw-" + suffix,
		"wrong store password": "WrongDsnPw-" + suffix,
		"SASL password":        "SaslPw-" + suffix,
		"wrong SASL password":  "WrongSaslPw-" + suffix,
		"key password":         "KeyPw-" + suffix,
		"wrong key password":   "WrongKeyPw-" + suffix,
		"webhook token":        "HookTok-" + suffix,
		"webhook password":     "HookPw-" + suffix,
		"AWS secret key":       "AwsSecret-" + suffix,
		"AWS session token":    "AwsToken-" + suffix,
	}
	dir := t.TempDir()

	// The store: a role of its own with a distinctive password, and a schema it owns.
	admin, pcfg := pgAdmin(t, adminDSN)
	role, schema := "leak_"+suffix, "leak_"+suffix
	pgRole(t, adminDSN, role, secret["store password"], schema)
	mustExec(t, admin, fmt.Sprintf(`GRANT CREATE ON DATABASE %s TO %s`, pcfg.Database, role))
	// Every command reaches the store over TLS, verify-full against the test CA.
	pgHost := net.JoinHostPort(pcfg.Host, strconv.Itoa(int(pcfg.Port)))
	pgURL := func(host, query string) *url.URL {
		return &url.URL{Scheme: "postgres", User: url.UserPassword(role, secret["store password"]), Host: host, Path: "/" + pcfg.Database, RawQuery: query}
	}
	verifyFull := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {ca}}.Encode()
	storeDSN := pgURL(pgHost, verifyFull).String()
	bare := pgURL(pgHost, verifyFull)
	bare.User = url.User(role)
	bareDSN := bare.String()
	wrongDSN := strings.Replace(storeDSN, secret["store password"], secret["wrong store password"], 1)
	testenv.RequireTLS(t, storeDSN)

	// The broker: a SCRAM-SHA-512 user with a distinctive password and every right.
	kc := testenv.Client(t)
	adm := kadm.NewClient(kc)
	user := "leak-" + suffix
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: secret["SASL password"]}}); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("User:" + user).AllowHosts().Topics("*").Groups("*").Clusters().TransactionalIDs("*").
		Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, acl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = adm.DeleteACLs(context.Background(), acl)
		_, _ = adm.AlterUserSCRAMs(context.Background(), []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha512}}, nil)
	})
	topic := testenv.Topic(t, 1, nil)
	dlqTopic := topic + ".dlq"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, dlqTopic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteTopic(t, kc, dlqTopic) })
	var recs []*kgo.Record
	for i := 1; i <= 3; i++ {
		v := fmt.Sprintf(`{"event_id":"e%d","aggregate_type":"task","aggregate_id":"a1","aggregate_version":%d,"type":"task.updated","occurred_at":"2026-12-01T00:00:00Z","data":{}}`, i, i)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("a1"), Value: []byte(v)})
	}
	recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("a1"), Value: []byte("not json")})
	testenv.Produce(t, kc, recs...)

	// The files: the SASL password (readable by all, for the warning), an encrypted PKCS#8 key
	// and a PKCS#12 bundle for the mutual-TLS listener, their password in a file.
	saslFile := filepath.Join(dir, "sasl-password")
	if err := os.WriteFile(saslFile, []byte(secret["SASL password"]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	certPEM, key := testenv.ClientCert(t, "fieldwork")
	certFile := testenv.WriteFile(t, dir, "client.pem", certPEM)
	enc, err := pkcs8.MarshalPrivateKey(key, []byte(secret["key password"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := testenv.WriteFile(t, dir, "client.key", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}))
	blk, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	p12, err := pkcs12.Modern.Encode(key, leaf, nil, secret["key password"])
	if err != nil {
		t.Fatal(err)
	}
	bundle := testenv.WriteFile(t, dir, "client.p12", p12)
	keyPwFile := testenv.WriteFile(t, dir, "key-password", []byte(secret["key password"]+"\n"))
	wrongKeyPwFile := testenv.WriteFile(t, dir, "wrong-key-password", []byte(secret["wrong key password"]+"\n"))

	// The config file: a context whose DSN holds the password (the file is readable by all,
	// for the warning), and one that names the variable holding it.
	cfgFile := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("contexts:\n  inline:\n    dsn: %q\n  apart:\n    dsn: %q\n    dsn_password_env: LEAK_STORE_PASSWORD\n", storeDSN, bareDSN)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	// The webhook: one that takes e1 and rejects every other event (dead letters "rejected"),
	// and an unreachable one (dead letters "exhausted" with the transport error), both with user
	// info and a token.
	rejecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID string `json:"event_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		if ev.ID != "e1" {
			http.Error(w, "no", http.StatusBadRequest)
		}
	}))
	defer rejecting.Close()
	hook := func(base string) string {
		u, _ := url.Parse(base + "/hook")
		u.User = url.UserPassword("hookuser", secret["webhook password"])
		u.RawQuery = "token=" + secret["webhook token"]
		return u.String()
	}

	secure := func(extra map[string]string) map[string]string {
		env := map[string]string{
			"FIELDWORK_BROKERS": secureAddr, "FIELDWORK_TLS_CA": ca,
			"FIELDWORK_SASL_MECHANISM": "SCRAM-SHA-512", "FIELDWORK_SASL_USERNAME": user,
			"FIELDWORK_SASL_PASSWORD": secret["SASL password"], "FIELDWORK_DSN": storeDSN,
			"LEAK_STORE_PASSWORD": secret["store password"],
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}

	var seen strings.Builder
	runs := 0
	run := func(env map[string]string, args ...string) roottest.Result {
		t.Helper()
		runs++
		r := roottest.Run(t, env, args...)
		// The command line is the input, not what fieldwork showed: only the output is kept.
		fmt.Fprintf(&seen, "$ fieldwork %s …\n%s\n%s\n", args[0], r.Stdout, r.Stderr)
		return r
	}
	expect := func(code int, env map[string]string, args ...string) roottest.Result {
		t.Helper()
		r := run(env, args...)
		if r.Code != code {
			t.Errorf("fieldwork %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
		}
		return r
	}

	// Wait, bounded, until the new user's rights have reached the broker.
	deadline := time.Now().Add(30 * time.Second)
	for run(secure(nil), "inspect", "topic", topic, "-o", "json").Code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the SASL_SSL user cannot read %s after 30s", topic)
		}
		time.Sleep(200 * time.Millisecond)
	}

	s := []string{"--schema", schema}
	group := "leak-" + suffix
	// Every leaf command, run for real; the list is checked against the tree below.
	ran := map[string]bool{}
	do := func(code int, env map[string]string, args ...string) roottest.Result {
		t.Helper()
		path := "fieldwork"
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				break
			}
			if isCommand(path + " " + a) {
				path += " " + a
			}
		}
		ran[path] = true
		return expect(code, env, args...)
	}
	env := secure(nil)
	do(0, env, append([]string{"db", "migrate"}, s...)...)
	do(0, env, append([]string{"db", "status"}, s...)...)
	do(0, env, "inspect", "topic", topic)
	do(0, env, "inspect", "record", topic+"/0/0")
	do(0, env, "inspect", "records", topic)
	do(0, env, "inspect", "aggregate", topic, "a1")
	do(3, env, "inspect", "validate", topic)
	do(0, env, append([]string{"consume", "--topic", topic, "--group", group, "--handler", "webhook", "--webhook-url", hook(rejecting.URL),
		"--migrate", "--stop-when-idle", "2s", "--metrics-addr", "", "--max-attempts", "1", "--log-format", "json"}, s...)...)
	do(0, env, append([]string{"dlq", "list", "--topic", dlqTopic}, s...)...)
	do(0, env, append([]string{"dlq", "show", dlqTopic + "/0/0"}, s...)...)
	do(0, env, append([]string{"dlq", "stats", "--topic", dlqTopic}, s...)...)
	// Off a terminal triage refuses before it connects (exit 2); what its screens show are the
	// dlq show, replay and processed get renderings run here.
	do(2, env, append([]string{"triage", "--topic", dlqTopic}, s...)...)
	do(0, env, append([]string{"replay", "--topic", dlqTopic}, s...)...)
	do(0, env, append([]string{"replay", "--topic", dlqTopic, "--dlq-reason", "rejected", "--execute", "--yes", "--reason", "leak test"}, s...)...)
	listed := do(0, env, append([]string{"replay", "runs", "-o", "json"}, s...)...)
	var runList []struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(listed.Stdout), &runList); err != nil || len(runList) == 0 {
		t.Fatalf("replay runs: %v %q", err, listed.Stdout)
	}
	do(0, env, append([]string{"replay", "show", runList[0].ID}, s...)...)
	do(0, env, append([]string{"replay", "resume", runList[0].ID, "--execute", "--yes"}, s...)...) // completed: nothing to resume
	do(0, env, append([]string{"processed", "get", "e1"}, s...)...)
	do(0, env, append([]string{"processed", "list"}, s...)...)
	do(0, env, append([]string{"processed", "stats"}, s...)...)
	do(3, env, append([]string{"processed", "check", "--topic", topic, "--consumer", group}, s...)...)
	do(0, env, append([]string{"processed", "prune", "--older-than", "30d", "--execute", "--yes"}, s...)...)
	do(0, env, append([]string{"processed", "forget", "e1", "--consumer", group, "--execute", "--yes"}, s...)...)
	do(0, env, append([]string{"processed", "journal", "-o", "json"}, s...)...) // the prune and forget just journaled
	// A group stuck at offset 0: listed, described, skipped (planned, executed), undone, reset
	// (planned, executed), undone.
	stuck := "leak-stuck-" + suffix
	if err := adm.CommitAllOffsets(ctx, stuck, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	do(0, env, "groups", "list")
	do(0, env, "groups", "describe", stuck, "--interval", "0")
	// A share group that has not run: checked on its configuration, no DLQ topic (exit 3).
	do(3, env, "groups", "check", "leak-share-"+suffix)
	skipArgs := append([]string{"groups", "skip", stuck, "--topic", topic, "--partition", "0"}, s...)
	do(0, env, skipArgs...)
	skipped := do(0, env, append(skipArgs, "--execute", "--yes", "--reason", "leak test", "-o", "json")...)
	var skip struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(skipped.Stdout), &skip); err != nil || skip.ID == "" {
		t.Fatalf("groups skip: %v %q", err, skipped.Stdout)
	}
	do(0, env, append([]string{"groups", "skip", "--undo", skip.ID, "--execute", "--yes", "--reason", "leak test"}, s...)...)
	// Reset (planned, executed), undone.
	resetArgs := append([]string{"groups", "reset", stuck, "--to-latest"}, s...)
	do(0, env, resetArgs...)
	reset := do(0, env, append(resetArgs, "--execute", "--yes", "--reason", "leak test", "-o", "json")...)
	if err := json.Unmarshal([]byte(reset.Stdout), &skip); err != nil || skip.ID == "" {
		t.Fatalf("groups reset: %v %q", err, reset.Stdout)
	}
	do(0, env, append([]string{"groups", "reset", "--undo", skip.ID, "--execute", "--yes", "--reason", "leak test"}, s...)...)
	do(0, env, append([]string{"groups", "journal"}, s...)...)
	withFile := secure(map[string]string{"FIELDWORK_CONFIG": cfgFile})
	do(0, withFile, "context", "list")
	do(0, withFile, "context", "show", "inline")
	do(0, withFile, "context", "current", "--context", "apart")
	do(0, withFile, "context", "use", "apart")
	do(0, env, "version")
	do(0, env, "docs", "--markdown-dir", filepath.Join(dir, "md"), "--man-dir", filepath.Join(dir, "man"))
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		do(0, env, "completion", sh)
	}
	// The webhook unreachable: the transport error is dead-lettered as exhausted.
	do(0, env, append([]string{"consume", "--topic", topic, "--group", group + "-down", "--handler", "webhook", "--webhook-url", hook("http://127.0.0.1:1"),
		"--stop-when-idle", "2s", "--metrics-addr", "", "--max-attempts", "1", "--retry-backoff", "10ms", "--log-format", "text"}, s...)...)

	// Every command's help, and every leaf run above (or excused).
	for _, path := range commandPaths() {
		args := append(strings.Fields(path)[1:], "--help")
		expect(0, env, args...)
		if isLeaf(path) && !ran[path] && notRun[path] == "" {
			t.Errorf("%s is not run by the leak test: add it, or say in notRun why not", path)
		}
	}

	// AWS_MSK_IAM with credentials in the environment, against a listener that does not offer
	// it. The AWS SDK reads the process's environment; instance metadata is never asked.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", testenv.WriteFile(t, dir, "aws-config", nil))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", testenv.WriteFile(t, dir, "aws-credentials", nil))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIALEAKTEST00000000")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret["AWS secret key"])
	t.Setenv("AWS_SESSION_TOKEN", secret["AWS session token"])
	expect(4, secure(map[string]string{"FIELDWORK_SASL_MECHANISM": "AWS_MSK_IAM"}), "inspect", "topic", topic)

	// Every failure that can be provoked.
	pw := secret["store password"]
	for _, dsn := range []string{
		"postgres:/" + role + ":" + pw + "@" + pgHost + "/db",
		role + ":" + pw + "@" + pgHost + "/db",
		"postgres://" + role + ":Head@" + pw + "@" + pgHost + "/db",
		"postgres://" + role + ":" + pw + "@127.0.0.1:notaport/db",
		"host=127.0.0.1 port=abc user=" + role + " password=" + pw,
		"host=127.0.0.1 user=" + role + " password='" + pw + " unclosed",
		"postgres://" + role + ":" + pw + "@" + pgHost + "/db?sslmode=maybe",
		"mysql://" + role + ":" + pw + "@" + pgHost + "/db",
		pw,
	} {
		r := run(secure(map[string]string{"FIELDWORK_DSN": dsn}), "processed", "stats")
		if r.Code != 2 && r.Code != 4 {
			t.Errorf("DSN %d chars: exit %d, want 2 or 4: %s", len(dsn), r.Code, r.Stderr)
		}
		run(secure(nil), "processed", "stats", "--dsn", dsn)
	}
	expect(4, secure(map[string]string{"FIELDWORK_DSN": wrongDSN}), "processed", "stats")
	// TLS to the store: a root that did not sign the server's certificate, and a host the
	// certificate does not name (127.0.0.2, relayed to the server), are refused naming the
	// cause; sslmode=require without a root encrypts without verifying.
	otherRoot := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {testenv.OtherCA(t, dir)}}.Encode()
	misnamed := testenv.Forward(t, "127.0.0.2:0", pgHost)
	for _, c := range []struct{ dsn, cause string }{
		{pgURL(pgHost, otherRoot).String(), "x509: certificate signed by unknown authority"},
		{pgURL(misnamed, verifyFull).String(), "x509: certificate is valid for 127.0.0.1, not 127.0.0.2"},
	} {
		r := expect(4, secure(map[string]string{"FIELDWORK_DSN": c.dsn}), "db", "status", "--schema", schema)
		if !strings.Contains(r.Stderr, "tls: failed to verify certificate: "+c.cause) {
			t.Errorf("store over TLS: want the cause %q\n%s", c.cause, r.Stderr)
		}
	}
	requireDSN := pgURL(pgHost, "sslmode=require").String()
	testenv.RequireTLS(t, requireDSN)
	expect(0, secure(map[string]string{"FIELDWORK_DSN": requireDSN}), "db", "status", "--schema", schema)
	expect(4, secure(map[string]string{"FIELDWORK_DSN": "postgres://" + role + ":" + pw + "@127.0.0.1:1/db?sslmode=disable"}), "db", "status")
	r := expect(0, secure(nil), "processed", "stats", "--dsn", storeDSN, "--schema", schema)
	if !strings.Contains(r.Stderr, "process list (ps)") {
		t.Errorf("no warning for a password in --dsn: %s", r.Stderr)
	}
	r = expect(0, secure(map[string]string{"FIELDWORK_DSN": "", "FIELDWORK_CONFIG": cfgFile}), "processed", "stats", "--context", "inline", "--schema", schema)
	if !strings.Contains(r.Stderr, "config file "+cfgFile+" can be read") {
		t.Errorf("no warning for a config file others can read: %s", r.Stderr)
	}
	expect(0, secure(map[string]string{"FIELDWORK_DSN": "", "FIELDWORK_CONFIG": cfgFile}), "processed", "stats", "--context", "apart", "--schema", schema)
	expect(4, secure(map[string]string{"FIELDWORK_SASL_PASSWORD": secret["wrong SASL password"]}), "inspect", "topic", topic)
	expect(4, secure(map[string]string{"FIELDWORK_SASL_PASSWORD": secret["wrong SASL password"], "FIELDWORK_SASL_MECHANISM": "PLAIN"}), "dlq", "list")
	r = expect(0, secure(map[string]string{"FIELDWORK_SASL_PASSWORD": ""}), "inspect", "topic", topic, "--sasl-password-file", saslFile)
	if !strings.Contains(r.Stderr, "SASL password file "+saslFile+" can be read") {
		t.Errorf("no warning for a SASL password file others can read: %s", r.Stderr)
	}
	expect(4, secure(map[string]string{"FIELDWORK_BROKERS": "127.0.0.1:1"}), "dlq", "stats", "--connect-timeout", "3s")
	mtls := func(extra map[string]string) map[string]string {
		env := map[string]string{"FIELDWORK_BROKERS": mtlsAddr, "FIELDWORK_TLS_CA": ca, "FIELDWORK_DSN": storeDSN}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	expect(0, mtls(map[string]string{"FIELDWORK_TLS_CERT": certFile, "FIELDWORK_TLS_KEY": keyFile, "FIELDWORK_TLS_KEY_PASSWORD": secret["key password"]}), "inspect", "topic", topic)
	expect(0, mtls(nil), "inspect", "topic", topic, "--tls-pkcs12", bundle, "--tls-key-password-file", keyPwFile)
	expect(2, mtls(map[string]string{"FIELDWORK_TLS_CERT": certFile, "FIELDWORK_TLS_KEY": keyFile, "FIELDWORK_TLS_KEY_PASSWORD": secret["wrong key password"]}), "inspect", "topic", topic)
	expect(2, mtls(nil), "dlq", "list", "--tls-pkcs12", bundle, "--tls-key-password-file", wrongKeyPwFile)
	r = expect(0, secure(nil), "inspect", "topic", topic, "--tls-insecure-skip-verify")
	if !strings.Contains(r.Stderr, "verification is off") {
		t.Errorf("no warning for --tls-insecure-skip-verify: %s", r.Stderr)
	}
	r = run(map[string]string{"FIELDWORK_BROKERS": secureAddr, "FIELDWORK_SASL_MECHANISM": "PLAIN", "FIELDWORK_SASL_USERNAME": user,
		"FIELDWORK_SASL_PASSWORD": secret["SASL password"]}, "inspect", "topic", topic, "--connect-timeout", "3s")
	if r.Code != 4 || !strings.Contains(r.Stderr, "without TLS sends the credentials in the clear") {
		t.Errorf("PLAIN without TLS against a TLS listener: exit %d: %s", r.Code, r.Stderr)
	}

	// What reached Kafka and the store.
	letters := readAll(t, dlqTopic)
	if len(letters) == 0 {
		t.Fatal("no dead letters were written")
	}
	var rejected, exhausted bool
	for _, rec := range letters {
		fmt.Fprintf(&seen, "dead letter %s/%d/%d key %q value %q\n", rec.Topic, rec.Partition, rec.Offset, rec.Key, rec.Value)
		for _, h := range rec.Headers {
			fmt.Fprintf(&seen, "  %s: %q\n", h.Key, h.Value)
			if h.Key == "fw.dlq.error" && strings.Contains(string(h.Value), "/hook?token=REDACTED") {
				if strings.Contains(string(h.Value), "400") {
					rejected = true
				} else {
					exhausted = true
				}
			}
		}
	}
	if !rejected || !exhausted {
		t.Errorf("the dead letters do not name the webhook URL redacted (rejected %v, exhausted %v)", rejected, exhausted)
	}
	rows := dumpSchema(t, admin, schema)
	if !strings.Contains(rows, "token=REDACTED") || !strings.Contains(rows, "leak test") {
		t.Errorf("the store's tables do not hold what the commands wrote:\n%s", rows)
	}
	seen.WriteString(rows)

	all := seen.String()
	t.Logf("%d runs of fieldwork, %d dead letters, %d bytes of output, headers and rows searched for %d secrets", runs, len(letters), len(all), len(secret))
	for what, s := range secret {
		if i := strings.Index(all, s); i >= 0 {
			lo, hi := max(0, i-300), min(len(all), i+len(s)+100)
			t.Errorf("the %s appears:\n…%s…", what, all[lo:hi])
		}
	}
	if strings.Count(all, "warning: ") == 0 {
		t.Error("no warning at all was printed")
	}
}

// pgAdmin connects to the test PostgreSQL as its administrator (closed at cleanup), to make
// roles and grants, and returns the connection and the DSN's settings.
func pgAdmin(t *testing.T, adminDSN string) (*pgx.Conn, *pgconn.Config) {
	t.Helper()
	admin, err := pgx.Connect(context.Background(), adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	pcfg, err := pgconn.ParseConfig(adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	return admin, pcfg
}

// pgRole creates a login role with password and, at cleanup, drops schema (which the role may
// have made, or a test made for it), every grant and object of the role, and the role.
func pgRole(t *testing.T, adminDSN, role, password, schema string) {
	t.Helper()
	admin, pcfg := pgAdmin(t, adminDSN)
	mustExec(t, admin, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, role, password))
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), adminDSN)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
		_, _ = c.Exec(context.Background(), fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM %s`, pcfg.Database, role))
		_, _ = c.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
	})
}

func mustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", strings.SplitN(sql, " PASSWORD", 2)[0], err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tree() *cobra.Command {
	return root.NewCmdRoot(cmdutil.TestFactory())
}

// commandPaths lists every command of the tree, as root.NewCmdRoot builds it.
func commandPaths() []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && !sub.Hidden {
				walk(sub)
			}
		}
	}
	walk(tree())
	return out
}

func find(path string) *cobra.Command {
	c, _, err := tree().Find(strings.Fields(path)[1:])
	if err != nil || c.CommandPath() != path {
		return nil
	}
	return c
}

func isCommand(path string) bool { return find(path) != nil }

func isLeaf(path string) bool {
	c := find(path)
	return c != nil && c.Runnable() && !c.HasSubCommands()
}

// readAll reads every record of topic from the start to its end now.
func readAll(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(testenv.Client(t))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl := testenv.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records", topic, len(out), want)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// dumpSchema returns every row of every table of schema, as text.
func dumpSchema(t *testing.T, c *pgx.Conn, schema string) string {
	t.Helper()
	ctx := context.Background()
	rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables of %s: %v %v", schema, tables, err)
	}
	var b strings.Builder
	for _, table := range tables {
		rows, err := c.Query(ctx, fmt.Sprintf(`SELECT t::text FROM %q.%q t`, schema, table))
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "table %s: %d rows\n%s\n", table, len(texts), strings.Join(texts, "\n"))
	}
	return b.String()
}
