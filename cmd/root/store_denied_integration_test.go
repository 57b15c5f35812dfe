package root_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestStoreDeniedIsNotAuthorized: a store that refuses an operation for want of a privilege
// (a PostgreSQL role without grants on the schema or table, an SQLite file that may not be
// written) is "not authorized", exit 5, as a denied ACL is, with the database's own words and
// what the command needs; with the grants the same commands run.
func TestStoreDeniedIsNotAuthorized(t *testing.T) {
	adminDSN := testenv.DSN(t)
	admin, pcfg := pgAdmin(t, adminDSN)
	suffix := randomHex(t)
	role, schema := "denied_"+suffix, "denied_"+suffix
	if r := roottest.Run(t, map[string]string{"FIELDWORK_DSN": adminDSN}, "db", "migrate", "--schema", schema); r.Code != 0 {
		t.Fatalf("db migrate: exit %d %s", r.Code, r.Stderr)
	}
	pgRole(t, adminDSN, role, "denied-pw", schema)
	u := &url.URL{Scheme: "postgres", User: url.UserPassword(role, "denied-pw"), Host: fmt.Sprintf("%s:%d", pcfg.Host, pcfg.Port),
		Path: "/" + pcfg.Database, RawQuery: "sslmode=disable"}
	env := map[string]string{"FIELDWORK_DSN": u.String()}

	denied := func(what string, args ...string) {
		t.Helper()
		r := roottest.Run(t, env, append(args, "--schema", schema)...)
		if r.Code != root.ExitDenied || !strings.Contains(r.Stderr, "error: not authorized: ") || !strings.Contains(r.Stderr, "(SQLSTATE 42501)") ||
			!strings.Contains(r.Stderr, "hint: the database role") {
			t.Errorf("%s: exit %d, want %d (not authorized)\n%s", what, r.Code, root.ExitDenied, r.Stderr)
		}
	}
	// No grant on the schema: nothing can be read.
	denied("stats without USAGE", "processed", "stats")
	// Reading granted, writing not: the forget's journal and delete are refused.
	mustExec(t, admin, fmt.Sprintf(`GRANT USAGE ON SCHEMA %s TO %s`, schema, role))
	mustExec(t, admin, fmt.Sprintf(`GRANT SELECT ON ALL TABLES IN SCHEMA %s TO %s`, schema, role))
	if r := roottest.Run(t, env, "processed", "stats", "--schema", schema, "-o", "json"); r.Code != 0 {
		t.Errorf("stats with SELECT: exit %d %s", r.Code, r.Stderr)
	}
	denied("forget without DELETE", "processed", "forget", "e1", "--consumer", "c", "--execute", "--yes", "--reason", "r")

	// SQLite: a store this process may only read.
	db := filepath.Join(t.TempDir(), "fw.db")
	if r := roottest.Run(t, map[string]string{"FIELDWORK_DSN": "sqlite:" + db}, "db", "migrate"); r.Code != 0 {
		t.Fatalf("db migrate (SQLite): exit %d %s", r.Code, r.Stderr)
	}
	r := roottest.Run(t, map[string]string{"FIELDWORK_DSN": "sqlite:" + db + "?_pragma=query_only(1)"},
		"processed", "forget", "e1", "--consumer", "c", "--execute", "--yes", "--reason", "r")
	if r.Code != root.ExitDenied || !strings.Contains(r.Stderr, "error: not authorized: ") || !strings.Contains(r.Stderr, "readonly database") {
		t.Errorf("SQLite read only: exit %d, want %d (not authorized)\n%s", r.Code, root.ExitDenied, r.Stderr)
	}
}
