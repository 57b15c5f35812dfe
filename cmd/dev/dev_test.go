package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/output"
)

// syncBuffer is a buffer the command writes from its goroutine while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type devRunResult struct {
	ran  *cobra.Command
	err  error
	code int
}

// startDev runs `fieldwork <args>` in the background on non-terminal streams.
func startDev(ctx context.Context, args ...string) (out, errOut *syncBuffer, done <-chan devRunResult) {
	out, errOut = &syncBuffer{}, &syncBuffer{}
	f := &Factory{Streams: &output.Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Getenv: func(string) string { return "" }}
	root := NewRootCmd(f)
	root.SetArgs(args)
	ch := make(chan devRunResult, 1)
	go func() {
		ran, err := root.ExecuteContextC(ctx)
		ch <- devRunResult{ran: ran, err: err, code: exitCode(ctx, f, ran, err)}
	}()
	return out, errOut, ch
}

var brokersRE = regexp.MustCompile(`brokers\s+(127\.0\.0\.1:\d+)`)

func waitFor(t *testing.T, buf *syncBuffer, re *regexp.Regexp, done <-chan devRunResult) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		select {
		case r := <-done:
			t.Fatalf("dev exited early (code %d, err %v):\n%s", r.code, r.err, buf.String())
		case <-deadline:
			t.Fatalf("no %v within 30s:\n%s", re, buf.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestDevServesAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	out, errOut, done := startDev(ctx, "dev", "--port", "0", "--dsn", dsn, "--seed", "3")

	// Stdout is not a terminal: the banner goes to stderr, stdout stays clean.
	addr := waitFor(t, errOut, brokersRE, done)[1]
	waitFor(t, errOut, regexp.MustCompile(`press Ctrl-C to stop`), done)
	banner := errOut.String()
	for _, want := range []string{"dsn      " + dsn, "fieldwork inspect topic tasks --brokers " + addr, "fieldwork inspect validate tasks --brokers " + addr, "tasks.dlq", "invalid-json", "missing-id", "bad-version"} {
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
		if r.err != nil || r.code != ExitOK {
			t.Fatalf("after cancel: code %d, err %v\n%s", r.code, r.err, errOut.String())
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
	out, errOut, done := startDev(ctx, "dev", "--port", "0", "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "dev.db"), "-o", "json", "--partitions", "2", "--dead-letters")
	waitFor(t, errOut, regexp.MustCompile(`press Ctrl-C to stop`), done)
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
		Try []string `json:"try"`
	}
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(info.Brokers, "127.0.0.1:") || len(info.Seeded) != 2 || info.Seeded[0].Topic != "tasks" ||
		info.Seeded[0].Partitions != 2 || len(info.Seeded[0].PerPartition) != 2 || info.Seeded[1].Poison != 3 || len(info.Poison) != 3 || len(info.Try) == 0 {
		t.Errorf("info: %+v", info)
	}
	cancel()
	if r := <-done; r.code != ExitOK {
		t.Fatalf("code %d, err %v", r.code, r.err)
	}
}

func TestDevPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_, errOut, done := startDev(context.Background(), "dev", "--port", port, "--no-seed", "--dsn", "sqlite:"+filepath.Join(t.TempDir(), "dev.db"))
	r := <-done
	if r.code != ExitError {
		t.Fatalf("code %d, want %d; err %v", r.code, ExitError, r.err)
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
		dsn  string // expected DevOptions.DSN; "" means a usage error
		want DevOptions
	}{
		{args: []string{"dev"}, dsn: "default", want: DevOptions{Port: 9092, Partitions: 3, Seed: 1}},
		{args: []string{"dev", "--port", "19092", "--partitions", "6", "--seed", "9", "--no-seed", "--dsn", "sqlite:" + dir + "/x.db"},
			dsn: "sqlite:" + dir + "/x.db", want: DevOptions{Port: 19092, Partitions: 6, Seed: 9, NoSeed: true}},
		{args: []string{"dev", "--dsn", "sqlite://" + dir + "/y.db?_pragma=busy_timeout(100)"}, dsn: "sqlite:" + dir + "/y.db?_pragma=busy_timeout(100)", want: DevOptions{Port: 9092, Partitions: 3, Seed: 1}},
		{args: []string{"dev", "--dsn", "postgres://u@localhost/db"}},
		{args: []string{"dev", "--dsn", "sqlite:"}},
		{args: []string{"dev", "--port", "70000"}},
		{args: []string{"dev", "--partitions", "0"}},
		{args: []string{"dev", "--brokers", "localhost:9092"}},
		{args: []string{"dev", "extra"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := &Factory{Streams: &output.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
			root := NewRootCmd(f)
			var got *DevOptions
			for _, c := range root.Commands() {
				if c.Name() == "dev" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(newCmdDev(f, func(_ context.Context, o *DevOptions) error { got = o; return nil }))
			root.SetArgs(tc.args)
			ran, err := root.ExecuteC()
			code := exitCode(context.Background(), f, ran, err)
			if tc.dsn == "" {
				if code != ExitUsage {
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
