package benchkit

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// A stat line's name may hold spaces and parentheses; the times are the four after the 13th
// field that follows it.
func TestProcTicks(t *testing.T) {
	line := "4242 (post gres) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 11 20 0 1 0 100 1000 10\n"
	name, ticks, ok := procTicks([]byte(line))
	if !ok || name != "post gres) (x)" || ticks != 7+3+20+11 {
		t.Errorf("procTicks = %q, %d, %v: want \"post gres) (x)\", 41, true", name, ticks, ok)
	}
	for _, bad := range []string{"", "1 no name S 1", "1 (short) S 1 2 3", "1 (nan) S 1 2 3 4 5 6 7 8 9 10 x 1 2 3 4"} {
		if _, _, ok := procTicks([]byte(bad)); ok {
			t.Errorf("procTicks(%q) read a line it should refuse", bad)
		}
	}
}

// A statement that keeps a PostgreSQL backend busy shows in PostgreSQL's CPU time. (Other
// tests may use PostgreSQL at the same time: only a lower bound holds.)
func TestServiceCPUCountsPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	before := ReadCPU()
	// About a second of a backend's CPU; the count is read back so that it is computed.
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 10000000) AS g(i) WHERE i % 7 = 3`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	var r Run
	before.Fill(&r)
	if n != 1428572 {
		t.Fatalf("count %d", n)
	}
	if r.PostgresS < 0.2 {
		t.Errorf("PostgreSQL %.2f s (the machine %.2f s): want ≥ 0.2 s", r.PostgresS, r.MachineS)
	}
}
