package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// PrivatePostgres is a PostgreSQL server of one test's own, from the same Debian packages as
// the shared one, so that the test may stop and restart it without disturbing other tests.
type PrivatePostgres struct {
	t    testing.TB
	bin  string
	dir  string
	port int
}

// StartPrivatePostgres initialises and starts a server on a free loopback port; it is
// stopped and removed at cleanup. A machine without PostgreSQL's server binaries skips the
// test, except under CI or FIELDWORK_TEST_REQUIRE=1, where it fails.
func StartPrivatePostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		Missing(t, "no PostgreSQL server binaries under /usr/lib/postgresql", "run scripts/services.sh start")
	}
	pg := &PrivatePostgres{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "fieldwork-pg-")
	if err != nil {
		t.Fatal(err)
	}
	pg.dir = dir
	t.Cleanup(func() {
		_ = pg.ctl("-m", "immediate", "-w", "stop")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		// The server refuses to run as root: its files belong to the postgres user.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pg.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if out, err := pg.command(filepath.Join(pg.bin, "initdb"), "-D", pg.data(), "-U", "fieldwork",
		"--auth-local=trust", "--auth-host=trust", "-E", "UTF8", "--locale=C.UTF-8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	pg.Start()
	return pg
}

// DSN is the server's connection string (user fieldwork, database postgres, no password).
func (pg *PrivatePostgres) DSN() string {
	return fmt.Sprintf("postgres://fieldwork@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", pg.port)
}

// Start starts the server and waits until it accepts connections.
func (pg *PrivatePostgres) Start() {
	pg.t.Helper()
	if err := pg.ctl("-w", "-t", "60", "-l", filepath.Join(pg.dir, "server.log"),
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off", pg.port, pg.dir), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(pg.dir, "server.log"))
		pg.t.Fatalf("start private postgres: %v\n%s", err, log)
	}
}

// Stop shuts the server down (fast mode: connections are closed, transactions rolled back).
func (pg *PrivatePostgres) Stop() {
	pg.t.Helper()
	if err := pg.ctl("-m", "fast", "-w", "stop"); err != nil {
		pg.t.Fatalf("stop private postgres: %v", err)
	}
}

func (pg *PrivatePostgres) data() string { return filepath.Join(pg.dir, "data") }

func (pg *PrivatePostgres) ctl(args ...string) error {
	out, err := pg.command(filepath.Join(pg.bin, "pg_ctl"), append([]string{"-D", pg.data()}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w: %s", args, err, out)
	}
	return nil
}

func (pg *PrivatePostgres) command(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}
