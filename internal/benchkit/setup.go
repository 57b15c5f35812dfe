package benchkit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
)

// CreateTopic creates the benchmark topic name with partitions partitions, replication 1 and
// configs (nil: the broker's defaults); an error names the topic.
func CreateTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// DropSchema drops a benchmark's PostgreSQL schema and all it holds, as cleanup: an error is
// ignored (the schema is then left behind, its name printed by the benchmark).
func DropSchema(dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
}
