package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ScriptMain is the TestMain of a package whose testscripts run fieldwork: it makes main
// (cmd.Main, passed in so that testenv does not import the commands) the program
// `fieldwork` of the scripts, run in the test binary itself, without a build:
//
//	func TestMain(m *testing.M) { testenv.ScriptMain(m, cmd.Main) }
//
// A package whose scripts need a real binary instead (one that a test sends signals to)
// builds it and puts its directory first in the scripts' PATH in its own Setup.
func ScriptMain(m testscript.TestingM, main func() int) {
	testscript.Main(m, map[string]func(){
		"fieldwork": func() { os.Exit(main()) },
	})
}

// ScriptParams are the testscript parameters every package's scripts share, for the
// scripts in dir:
//
//	p := testenv.ScriptParams("testdata/script")
//	p.UpdateScripts = golden.Update()
//	p.Cmds["fw-claim"] = cmdClaim // commands of the package's own
//	testscript.Run(t, p)
//
// Setup is ScriptSetup, Condition is ScriptCondition and Cmds are ScriptCmds (a map of the
// caller's own, to add to). A caller that needs more setup or conditions wraps them:
//
//	base := p.Setup
//	p.Setup = func(e *testscript.Env) error {
//		if err := base(e); err != nil {
//			return err
//		}
//		e.Setenv("TOPIC", topic)
//		return nil
//	}
func ScriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:       dir,
		Setup:     ScriptSetup,
		Condition: ScriptCondition,
		Cmds:      ScriptCmds(),
	}
}

// ScriptSetup gives a script:
//   - the services' variables of the test process (FIELDWORK_TEST_BROKERS,
//     FIELDWORK_TEST_SASL_BROKERS, FIELDWORK_TEST_SASL_USER, FIELDWORK_TEST_SASL_PASSWORD,
//     FIELDWORK_TEST_DSN) and CI, which testscript does not pass on;
//   - a clean home of its own (HOME=$WORK, XDG_CONFIG_HOME=$WORK/.config), so that no user
//     config leaks in;
//   - FW_SCHEMA, a name no other script uses, for a PostgreSQL schema (dropped with
//     everything in it when the script ends) and as a prefix of topic and group names;
//   - FW_TEST_DSN_WRONG_PASSWORD, the test server's DSN with a wrong password, for the
//     authentication failures.
func ScriptSetup(e *testscript.Env) error {
	for _, k := range []string{
		"FIELDWORK_TEST_BROKERS", "FIELDWORK_TEST_SASL_BROKERS", "FIELDWORK_TEST_SASL_USER",
		"FIELDWORK_TEST_SASL_PASSWORD", "FIELDWORK_TEST_DSN", "CI",
	} {
		e.Setenv(k, os.Getenv(k))
	}
	e.Setenv("HOME", e.WorkDir)
	e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/.config")
	schema := scriptName()
	e.Setenv("FW_SCHEMA", schema)
	if dsn := os.Getenv("FIELDWORK_TEST_DSN"); dsn != "" {
		e.Defer(func() { dropSchema(e.T(), dsn, schema) })
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			u.User = url.UserPassword(u.User.Username(), "wrong-s3cret")
			e.Setenv("FW_TEST_DSN_WRONG_PASSWORD", u.String())
		}
	}
	return nil
}

// ScriptCondition is [env:NAME]: true when the variable is set. A script that needs a
// service skips with `[!env:FIELDWORK_TEST_DSN] skip`; where the services are Required, an
// unset FIELDWORK_TEST_* variable fails the script instead, so that nothing passes there by
// skipping.
func ScriptCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "env:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if os.Getenv(name) != "" {
		return true, nil
	}
	if strings.HasPrefix(name, "FIELDWORK_TEST_") && Required() {
		return false, fmt.Errorf("%s is not set but the services are required here: start them with scripts/services.sh start", name)
	}
	return false, nil
}

// ScriptCmds returns, in a new map, the commands every package's scripts may use:
//
//	fieldwork-exit CODE ARGS...    run fieldwork, fail unless it exits with CODE
//	fw-exit CODE PROGRAM ARGS...   the same for any program (a runbook script, say)
//	fw-create-topic NAME PARTITIONS [CONFIG=VALUE...]
//	                               create a topic as CreateTopic does, deleted at the end
//	fw-create-db VAR               a PostgreSQL database of the script's own, its DSN in VAR
//	fw-capture stdout|stderr REGEXP VAR
//	                               VAR = the first submatch in the last command's output
//	fw-silent-port VAR             a loopback port that accepts and never answers
//
// fieldwork-exit and fw-exit keep the program's stdout and stderr for the next stdout and
// stderr checks, as exec does.
func ScriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"fieldwork-exit":  cmdFieldworkExit,
		"fw-exit":         cmdExit,
		"fw-create-topic": cmdCreateTopic,
		"fw-delete-topic": cmdDeleteTopic,
		"fw-create-db":    cmdCreateDB,
		"fw-capture":      cmdCapture,
		"fw-silent-port":  cmdSilentPort,
	}
}

func scriptName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "fwts_" + hex.EncodeToString(b)
}

// dropSchema removes a script's schema; a script that never created it costs one connection.
func dropSchema(t testscript.T, dsn, schema string) {
	if err := DropSchema(dsn, schema); err != nil {
		t.Log("drop schema " + schema + ": " + err.Error())
	}
}

func cmdFieldworkExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: fieldwork-exit CODE ARGS...")
	}
	cmdExit(ts, false, append([]string{args[0], "fieldwork"}, args[1:]...))
}

func cmdExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fw-exit CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("fw-exit: CODE %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Logf("stdout:\n%s\nstderr:\n%s", ts.ReadFile("stdout"), ts.ReadFile("stderr"))
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// scriptClient is a Kafka client of the script's brokers (FIELDWORK_TEST_BROKERS) for the
// script command cmd, which fails when they are not set.
func scriptClient(ts *testscript.TestScript, cmd string) *kgo.Client {
	brokers := ts.Getenv("FIELDWORK_TEST_BROKERS")
	if brokers == "" {
		ts.Fatalf("%s: FIELDWORK_TEST_BROKERS is not set", cmd)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	ts.Check(err)
	return cl
}

func cmdCreateTopic(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fw-create-topic NAME PARTITIONS [CONFIG=VALUE...]")
	}
	partitions, err := strconv.ParseInt(args[1], 10, 32)
	if err != nil {
		ts.Fatalf("fw-create-topic: PARTITIONS %q is not a number", args[1])
	}
	configs := map[string]*string{}
	for _, kv := range args[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("fw-create-topic: config %q is not CONFIG=VALUE", kv)
		}
		configs[k] = &v
	}
	cl := scriptClient(ts, "fw-create-topic")
	adm := kadm.NewClient(cl)
	ts.Defer(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, args[0])
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, adm, args[0], int32(partitions), 1, configs); err != nil {
		ts.Fatalf("fw-create-topic: %v", err)
	}
}

// cmdDeleteTopic deletes a topic and waits, bounded, until the broker no longer lists it, so
// that a script can create it again (a topic recreated under the same name).
func cmdDeleteTopic(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fw-delete-topic NAME")
	}
	cl := scriptClient(ts, "fw-delete-topic")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := deleteTopic(ctx, kadm.NewClient(cl), args[0]); err != nil {
		ts.Fatalf("fw-delete-topic: %v", err)
	}
}

func cmdCreateDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fw-create-db VAR")
	}
	base := ts.Getenv("FIELDWORK_TEST_DSN")
	if base == "" {
		ts.Fatalf("fw-create-db: FIELDWORK_TEST_DSN is not set")
	}
	name := ts.Getenv("FW_SCHEMA")
	if name == "" {
		name = scriptName()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	ts.Check(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE DATABASE "`+name+`"`)
	ts.Check(err)
	ts.Defer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	})
	u, err := url.Parse(base)
	ts.Check(err)
	u.Path = "/" + name
	ts.Setenv(args[0], u.String())
}

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

func cmdSilentPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fw-silent-port VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
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
