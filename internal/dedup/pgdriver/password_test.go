package pgdriver_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestPasswordApartFromTheDSN connects to the real PostgreSQL with a DSN that holds no
// password: the password given apart (a context's dsn_password_env or dsn_password_file)
// is used and beats PGPASSFILE; without it pgx reads PGPASSFILE; a wrong one is refused
// without being shown. The TLS DSN (verify-full) connects too.
func TestPasswordApartFromTheDSN(t *testing.T) {
	full := testDSN(t)
	cfg, err := pgconn.ParseConfig(full)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(full)
	if err != nil || u.User == nil {
		t.Skipf("FIELDWORK_TEST_DSN is not a URL with a user: %v", err)
	}
	u.User = url.User(cfg.User)
	bare := u.String()
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	ctx := context.Background()
	open := func(dsn, password string) error {
		st, err := dedup.Open(ctx, dsn, dedup.Options{Password: password, ConnectTimeout: 10 * time.Second})
		if err == nil {
			st.Close()
		}
		return err
	}
	if err := open(bare, cfg.Password); err != nil {
		t.Errorf("password apart: %v", err)
	}
	const wrong = "Wr0ng-Apart-NeverShown"
	err = open(bare, wrong)
	var ce *dedup.ConnectError
	if !errors.As(err, &ce) || strings.Contains(err.Error(), wrong) {
		t.Errorf("wrong password apart: %v", err)
	}

	pass := filepath.Join(t.TempDir(), "pgpass")
	line := cfg.Host + ":*:*:" + cfg.User + ":" + cfg.Password + "\n"
	if err := os.WriteFile(pass, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pass)
	if err := open(bare, ""); err != nil {
		t.Errorf("PGPASSFILE: %v", err)
	}
	if err := open(bare, wrong); !errors.As(err, &ce) {
		t.Errorf("a password apart beats PGPASSFILE: %v", err)
	}
	if err := open(testenv.TLSDSN(t), ""); err != nil {
		t.Errorf("TLS verify-full: %v", err)
	}
}
