package dev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/dev"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

func TestDevServesAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	// Stdout is not a terminal: the banner goes to stderr, stdout stays clean.
	addr, out, errOut, done := roottest.StartDev(t, ctx, "--dsn", dsn, "--seed", "3")
	banner := errOut.String()
	for _, want := range []string{"dsn              " + dsn, "fieldwork inspect topic tasks --brokers " + addr, "fieldwork inspect validate tasks --brokers " + addr, "tasks.dlq", "invalid-json", "missing-id", "bad-version"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	if out.String() != "" {
		t.Errorf("stdout: %q", out.String())
	}
	seeded := regexp.MustCompile(`(?m)^tasks\s+3\s+(\d+)\s+(\d+)/(\d+)/(\d+)\s`).FindStringSubmatch(banner)
	if seeded == nil {
		t.Fatalf("no seeded row for tasks:\n%s", banner)
	}

	// A separate client sees the topics and the seeded records.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "tasks", "tasks.dlq")
	if err != nil {
		t.Fatal(err)
	}
	for p := range 3 {
		o, _ := ends.Lookup("tasks", int32(p))
		if strconv.FormatInt(o.Offset, 10) != seeded[2+p] || o.Offset == 0 {
			t.Errorf("tasks/%d: end offset %d, banner says %s", p, o.Offset, seeded[2+p])
		}
	}
	cl.Close()

	cancel()
	select {
	case r := <-done:
		if r.Err != nil || r.Code != root.ExitOK {
			t.Fatalf("after cancel: code %d, err %v\n%s", r.Code, r.Err, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("dev did not stop within 15s of cancel")
	}
	if !strings.Contains(errOut.String(), "fieldwork dev: stopped") {
		t.Errorf("no stop message:\n%s", errOut.String())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port still held after stop: %v", err)
	}
	ln.Close()
}

func TestDevJSONOnStdout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, out, _, done := roottest.StartDev(t, ctx, "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "dev.db"), "-o", "json", "--partitions", "2", "--dead-letters")
	var info struct {
		Brokers string `json:"brokers"`
		DSN     string `json:"dsn"`
		Seeded  []struct {
			Topic        string `json:"topic"`
			Partitions   int    `json:"partitions"`
			Records      int    `json:"records"`
			Poison       int    `json:"poison"`
			PerPartition []int  `json:"per_partition"`
		} `json:"seeded"`
		Poison []struct {
			Kind      string `json:"kind"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"poison"`
		Try            []string `json:"try"`
		SchemaRegistry string   `json:"schema_registry"`
	}
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(info.Brokers, "127.0.0.1:") || !strings.HasPrefix(info.SchemaRegistry, "http://127.0.0.1:") || len(info.Seeded) != 4 || info.Seeded[0].Topic != "tasks" ||
		info.Seeded[0].Partitions != 2 || len(info.Seeded[0].PerPartition) != 2 || info.Seeded[1].Poison != 3 || len(info.Poison) != 3 || len(info.Try) == 0 {
		t.Errorf("info: %+v", info)
	}
	cancel()
	if r := <-done; r.Code != root.ExitOK {
		t.Fatalf("code %d, err %v", r.Code, r.Err)
	}
}

func TestDevPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_, errOut, done := roottest.Start(context.Background(), "dev", "--port", port, "--no-seed", "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "dev.db"))
	r := <-done
	if r.Code != root.ExitError {
		t.Fatalf("code %d, want %d; err %v", r.Code, root.ExitError, r.Err)
	}
	msg := errOut.String()
	if !strings.Contains(msg, "port "+port+" is already in use") || !strings.Contains(msg, "--port") {
		t.Errorf("message: %s", msg)
	}
}

func TestDevFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		dsn  string // expected dev.DevOptions.DSN; "" means a usage error
		want dev.DevOptions
	}{
		{args: []string{"dev"}, dsn: "default", want: dev.DevOptions{Port: 9092, Partitions: 3, Seed: 1}},
		{args: []string{"dev", "--port", "19092", "--partitions", "6", "--seed", "9", "--no-seed", "--dsn", "sqlite:" + dir + "/x.db"},
			dsn: "sqlite:" + dir + "/x.db", want: dev.DevOptions{Port: 19092, Partitions: 6, Seed: 9, NoSeed: true}},
		{args: []string{"dev", "--dsn", "sqlite://" + dir + "/y.db?_pragma=busy_timeout(100)"}, dsn: "sqlite:" + dir + "/y.db?_pragma=busy_timeout(100)", want: dev.DevOptions{Port: 9092, Partitions: 3, Seed: 1}},
		{args: []string{"dev", "--dsn", "postgres://u@localhost/db"}},
		{args: []string{"dev", "--dsn", "sqlite:"}},
		{args: []string{"dev", "--port", "70000"}},
		{args: []string{"dev", "--partitions", "0"}},
		{args: []string{"dev", "--brokers", "localhost:9092"}},
		{args: []string{"dev", "extra"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := &cmdutil.Factory{Streams: &output.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
			tree := root.NewCmdRoot(f)
			var got *dev.DevOptions
			for _, c := range tree.Commands() {
				if c.Name() == "dev" {
					tree.RemoveCommand(c)
				}
			}
			tree.AddCommand(dev.NewCmdDev(f, func(_ context.Context, o *dev.DevOptions) error { got = o; return nil }))
			tree.SetArgs(tc.args)
			ran, err := tree.ExecuteC()
			code := root.ExitCode(context.Background(), f, ran, err)
			if tc.dsn == "" {
				if code != root.ExitUsage {
					t.Fatalf("code %d, want usage (2); err %v", code, err)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if tc.dsn == "default" {
				if !strings.HasPrefix(got.DSN, "sqlite:/") || !strings.HasSuffix(got.DSN, "/fieldwork-dev.db") {
					t.Errorf("default DSN %q", got.DSN)
				}
			} else if got.DSN != tc.dsn {
				t.Errorf("DSN %q, want %q", got.DSN, tc.dsn)
			}
			if got.Port != tc.want.Port || got.Partitions != tc.want.Partitions || got.Seed != tc.want.Seed || got.NoSeed != tc.want.NoSeed {
				t.Errorf("options %+v, want %+v", *got, tc.want)
			}
		})
	}
}

// TestDevWarnsAboutAnEarlierStore: a store that holds markers from an earlier session is
// kept, with a warning that names --fresh; --fresh starts it over, without the warning.
func TestDevWarnsAboutAnEarlierStore(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	ctx := context.Background()
	st, err := dedup.Open(ctx, dsn, dedup.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "task-projection", []dedup.Marker{{EventID: "e-1"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	serve := func(args ...string) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, errOut, done := roottest.Start(ctx, append([]string{"dev", "--port", "0", "--dsn", dsn, "--no-seed"}, args...)...)
		roottest.WaitFor(t, errOut, regexp.MustCompile(`press Ctrl-C to stop`), done)
		cancel()
		if r := <-done; r.Code != root.ExitOK {
			t.Fatalf("code %d, err %v", r.Code, r.Err)
		}
		return errOut.String()
	}
	want := "warning: the store " + dsn + " already holds 1 marker of 1 consumer and 0 journaled replay runs from an earlier session"
	if got := serve(); !strings.Contains(got, want) || !strings.Contains(got, "fieldwork dev --fresh") {
		t.Errorf("no warning %q:\n%s", want, got)
	}
	if got := serve("--fresh"); strings.Contains(got, "warning:") {
		t.Errorf("--fresh warned:\n%s", got)
	}
	if got := serve(); strings.Contains(got, "warning:") {
		t.Errorf("after --fresh, the store still holds something:\n%s", got)
	}
}
