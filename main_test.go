package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script when a cmp fails")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fieldwork": func() { os.Exit(root.Main()) },
		// fieldwork-exit WANT ARGS... runs fieldwork and fails unless it exits with WANT, so
		// scripts can pin exact exit codes (testscript's `! exec` only knows "non-zero").
		"fieldwork-exit": func() {
			want, err := strconv.Atoi(os.Args[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, "fieldwork-exit: first argument must be the expected exit code")
				os.Exit(2)
			}
			os.Args = append([]string{"fieldwork"}, os.Args[2:]...)
			if got := root.Main(); got != want {
				fmt.Fprintf(os.Stderr, "fieldwork-exit: exit code %d, want %d\n", got, want)
				os.Exit(1)
			}
			os.Exit(0)
		},
	})
}

// TestScripts runs the end-to-end CLI scripts under testdata/script. Scripts that need the
// real services start with `[!env:FIELDWORK_TEST_BROKERS] skip` only outside CI: in CI the
// variables are always set by .ci/run, so those scripts run.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			for _, k := range []string{
				"FIELDWORK_TEST_BROKERS", "FIELDWORK_TEST_SASL_BROKERS", "FIELDWORK_TEST_SASL_USER",
				"FIELDWORK_TEST_SASL_PASSWORD", "FIELDWORK_TEST_DSN", "CI",
			} {
				e.Setenv(k, os.Getenv(k))
			}
			// The runbook scripts, which CI runs against the real services.
			if wd, err := os.Getwd(); err == nil {
				e.Setenv("RUNBOOKS", wd+"/docs/runbooks")
			}
			// A clean, isolated home: no user config leaks into the scripts.
			e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/.config")
			e.Setenv("HOME", e.WorkDir)
			// FW_SCHEMA is a name no other script uses: a Postgres schema (dropped with
			// everything in it when the script ends) and a prefix for topic names.
			schema := uniqueName()
			e.Setenv("FW_SCHEMA", schema)
			if dsn := os.Getenv("FIELDWORK_TEST_DSN"); dsn != "" {
				e.Defer(func() { dropSchema(e.T(), dsn, schema) })
				// The same server with a wrong password, for the authentication failure.
				if u, err := url.Parse(dsn); err == nil && u.User != nil {
					u.User = url.UserPassword(u.User.Username(), "wrong-s3cret")
					e.Setenv("FW_TEST_DSN_WRONG_PASSWORD", u.String())
				}
			}
			return nil
		},
		Condition: envCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fw-create-topic": cmdCreateTopic,
			"fw-claim":        cmdClaim,
			"fw-silent-port":  cmdSilentPort,
			"fw-capture":      cmdCapture,
			"fw-exit":         cmdExit,
			"fw-create-db":    cmdCreateDB,
			"fw-webhook":      cmdWebhook,
		},
	})
}

// envCondition is [env:NAME]: true when the variable is set. A script that needs a service
// skips with [!env:FIELDWORK_TEST_DSN] skip; under CI or FIELDWORK_TEST_REQUIRE=1 an unset
// service variable fails the script instead, so nothing passes there by skipping.
func envCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "env:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if os.Getenv(name) != "" {
		return true, nil
	}
	if strings.HasPrefix(name, "FIELDWORK_TEST_") && testenv.Required() {
		return false, fmt.Errorf("%s is not set but the services are required here: start them with scripts/services.sh start", name)
	}
	return false, nil
}

func uniqueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "fwts_" + hex.EncodeToString(b)
}

// dropSchema removes a script's Postgres schema; a script that never created it costs one
// connection.
func dropSchema(t testscript.T, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Log("drop schema " + schema + ": " + err.Error())
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
		t.Log("drop schema " + schema + ": " + err.Error())
	}
}

// cmdCreateTopic is `fw-create-topic NAME PARTITIONS [CONFIG=VALUE...]`: it creates a topic
// on $FIELDWORK_TEST_BROKERS (which does not auto-create topics; kcat cannot create them)
// and deletes it when the script ends.
func cmdCreateTopic(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fw-create-topic NAME PARTITIONS [CONFIG=VALUE...]")
	}
	brokers := ts.Getenv("FIELDWORK_TEST_BROKERS")
	if brokers == "" {
		ts.Fatalf("fw-create-topic: FIELDWORK_TEST_BROKERS is not set")
	}
	partitions, err := strconv.Atoi(args[1])
	ts.Check(err)
	configs := map[string]*string{}
	for _, kv := range args[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("fw-create-topic: config %q is not CONFIG=VALUE", kv)
		}
		configs[k] = &v
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	ts.Check(err)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, configs, args[0])
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		cl.Close()
		ts.Fatalf("fw-create-topic %s: %v", args[0], err)
	}
	ts.Defer(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, args[0])
	})
}

// cmdSilentPort is `fw-silent-port VAR`: it listens on a loopback port that accepts
// connections and never answers (a hung server, unlike a closed port that refuses at once),
// and sets VAR to the port for the rest of the script.
func cmdSilentPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fw-silent-port VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	ts.Defer(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ts.Setenv(args[0], strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

// cmdCapture is `fw-capture stdout|stderr REGEXP VAR`: it sets VAR to the first submatch of
// REGEXP in the last command's output, so a script can pass what one command printed (a
// cursor) to the next.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: fw-capture stdout|stderr REGEXP VAR")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(args[0]))
	if len(m) < 2 {
		ts.Fatalf("fw-capture: no match for %q in %s", args[1], args[0])
	}
	ts.Setenv(args[2], m[1])
}

// cmdClaim is `fw-claim [flags] DSN SCHEMA CONSUMER EVENT_ID...`: it writes markers the way
// a consumer does (dedup.Store.Claim), so scripts can seed a store on either driver. Flags:
// -ago D (processed that long ago), -topic T -partition P -offset N (the first id's offset;
// the next ids count up), -aggregate A -version V (the first id's version; counting up).
func cmdClaim(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("fw-claim", flag.ContinueOnError)
	ago := fs.Duration("ago", 0, "")
	topic := fs.String("topic", "", "")
	partition := fs.Int("partition", 0, "")
	offset := fs.Int64("offset", 0, "")
	aggregate := fs.String("aggregate", "", "")
	version := fs.Int64("version", 1, "")
	if err := fs.Parse(args); err != nil || neg || fs.NArg() < 4 {
		ts.Fatalf("usage: fw-claim [-ago D] [-topic T -partition P -offset N] [-aggregate A -version V] DSN SCHEMA CONSUMER EVENT_ID...")
	}
	rest := fs.Args()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dedup.Open(ctx, rest[0], dedup.Options{Schema: rest[1]})
	ts.Check(err)
	defer st.Close()
	var at time.Time
	if *ago > 0 {
		at = time.Now().Add(-*ago)
	}
	var ms []dedup.Marker
	for i, id := range rest[3:] {
		m := dedup.Marker{EventID: id, ProcessedAt: at, Topic: *topic}
		if *topic != "" {
			m.Partition, m.Offset = int32(*partition), *offset+int64(i)
		}
		if *aggregate != "" {
			m.AggregateID, m.AggregateVersion = *aggregate, *version+int64(i)
		}
		ms = append(ms, m)
	}
	ts.Check(st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, rest[2], ms)
		return err
	}))
}
