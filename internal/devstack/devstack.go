// Package devstack is the sandbox behind `fieldwork dev` and `fieldwork demo`: an in-process
// Kafka-protocol broker (franz-go's kfake) on a loopback port, the topics tasks and
// tasks.dlq, sample task events produced into them through a real franz-go client, and an
// SQLite dedup store, created and migrated.
//
// kfake keeps everything in memory: stopping the stack forgets the topics. The store is a
// file and outlives it. The broker has no authentication, which is why it only ever listens
// on a loopback address.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/redact"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// Defaults of Options.
const (
	DefaultHost       = "127.0.0.1"
	DefaultPort       = 9092
	DefaultPartitions = 3

	// TopicTasks is the seeded source topic; TopicDLQ its dead-letter topic.
	TopicTasks = "tasks"
	TopicDLQ   = "tasks.dlq"
	// TopicAvro holds the same stream as TopicTasks in Avro, in the Confluent wire format, its
	// schema in the sandbox's schema registry (docs/design.md §3.6).
	TopicAvro = "tasks.avro"

	// ClusterID is what the broker reports in metadata.
	ClusterID = "fieldwork-dev"
)

// ErrPortInUse matches (errors.Is) the error Start returns when the port is taken.
var ErrPortInUse = errors.New("port already in use")

// PortInUseError says which address could not be bound.
type PortInUseError struct {
	Host string
	Port int
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("cannot serve the dev broker on %s: port %d is already in use (is another Kafka broker or fieldwork dev running?)",
		net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), e.Port)
}

// Is makes errors.Is(err, ErrPortInUse) true.
func (e *PortInUseError) Is(target error) bool { return target == ErrPortInUse }

// Options configure Start.
type Options struct {
	// Host is the loopback address to listen on (DefaultHost when empty). Anything that is
	// not a loopback address is refused: the broker has no authentication.
	Host string
	// Port is the port to listen on; 0 lets the kernel choose a free one (see Stack.Addr).
	Port int
	// Partitions of both topics (DefaultPartitions when 0).
	Partitions int
	// DSN of the dedup store to create and migrate, normally sqlite:PATH. Empty: no store.
	DSN string
	// Fresh starts the store over: its SQLite file (and the -wal, -shm and -journal files
	// beside it) is removed before it is opened, so no marker or journaled run of an earlier
	// session is left. Only an SQLite DSN can be started over. The broker starts empty
	// every time (it keeps nothing).
	Fresh bool
	// Seed chooses the sample stream (see package sample).
	Seed uint64
	// NoSeed creates the topics empty.
	NoSeed bool
	// NoDeadLetters seeds TopicTasks but leaves TopicDLQ empty: no dead letter is written for
	// the poison records, so that a consumer writes them (fieldwork demo).
	NoDeadLetters bool
	// Sample overrides the stream's sizes and faults; nil means sample.DefaultOptions(Seed).
	// Its BaseTime is chosen by Start (so the stream ends a minute before now) unless set;
	// its Seed is used as given.
	Sample *sample.Options
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Host == "localhost" {
		o.Host = DefaultHost
	}
	if ip := net.ParseIP(o.Host); ip == nil || !ip.IsLoopback() {
		return o, fmt.Errorf("the dev broker listens on a loopback address only (it has no authentication): %q is not one", o.Host)
	}
	if o.Port < 0 || o.Port > 65535 {
		return o, fmt.Errorf("port %d is out of range 0-65535", o.Port)
	}
	if o.Partitions < 1 || o.Partitions > 1000 {
		return o, fmt.Errorf("partitions must be between 1 and 1000, not %d", o.Partitions)
	}
	return o, nil
}

// Stack is a running sandbox. Close stops it.
type Stack struct {
	// Addr is the broker's host:port, the address clients bootstrap from and the one the
	// broker advertises in its metadata.
	Addr string
	// DSN is the store's DSN ("" when there is none).
	DSN string
	// Partitions of each topic.
	Partitions int
	// Seeded says what was produced; nil with NoSeed.
	Seeded *Seeded
	// SchemaRegistry is the URL of the sandbox's schema registry (franz-go's srfake, in
	// memory), which holds TopicAvro's schema.
	SchemaRegistry string
	// Earlier is what the store held when the stack started: markers and journaled runs of
	// an earlier session (zero for a new or Fresh store).
	Earlier Earlier

	cluster  *kfake.Cluster
	registry *srfake.Registry
	regSrv   *http.Server
	store    *dedup.Store
	once     sync.Once
	err      error
}

// Earlier is what a store kept from an earlier session.
type Earlier struct {
	Markers   int64 // markers, of every consumer
	Consumers int   // consumers with markers
	Runs      int   // journaled replay runs
}

// Empty reports whether the store kept nothing.
func (e Earlier) Empty() bool { return e.Markers == 0 && e.Runs == 0 }

// Start serves the broker, creates the topics, opens and migrates the store and seeds the
// topics. The stack keeps running after ctx ends (ctx bounds starting only) until Close.
// On failure nothing is left running. A taken port is a *PortInUseError.
func Start(ctx context.Context, o Options) (*Stack, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Stack{DSN: o.DSN, Partitions: o.Partitions}
	s.cluster, err = kfake.NewCluster(
		kfake.Ports(o.Port), // one broker
		kfake.ListenFn(listenOn(o.Host)),
		kfake.ClusterID(ClusterID),
		kfake.DefaultNumPartitions(o.Partitions),
		kfake.SeedTopics(int32(o.Partitions), TopicTasks, TopicDLQ, TopicAvro),
	)
	if err != nil {
		var inUse *PortInUseError
		if errors.As(err, &inUse) {
			return nil, inUse // already names the broker
		}
		return nil, fmt.Errorf("start the dev broker: %w", err)
	}
	s.Addr = s.cluster.ListenAddrs()[0]
	if err := s.serveRegistry(o.Host); err != nil {
		s.Close()
		return nil, err
	}

	if o.DSN != "" {
		if o.Fresh {
			if err := removeStore(o.DSN); err != nil {
				s.Close()
				return nil, err
			}
		}
		if err := s.openStore(ctx, o.DSN); err != nil {
			s.Close()
			return nil, err
		}
		if s.Earlier, err = earlier(ctx, s.store); err != nil {
			s.Close()
			return nil, fmt.Errorf("read the dev store %s: %w", redact.DSN(o.DSN), err)
		}
	}
	if !o.NoSeed {
		seeded, err := seed(ctx, s.Addr, s.registry, o)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Seeded = seeded
	}
	return s, nil
}

// serveRegistry serves an in-memory schema registry on host, on a port the kernel chooses.
func (s *Stack) serveRegistry(host string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("start the dev schema registry: %w", err)
	}
	s.registry = srfake.NewRegistry()
	s.regSrv = &http.Server{Handler: s.registry.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.regSrv.Serve(ln) }()
	s.SchemaRegistry = "http://" + ln.Addr().String()
	return nil
}

// listenOn returns a kfake listen function that binds host instead of kfake's fixed
// 127.0.0.1 (kfake advertises whatever address the listener has), and names a taken port.
func listenOn(host string) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		_, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen(network, net.JoinHostPort(host, port))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				p, _ := strconv.Atoi(port)
				return nil, &PortInUseError{Host: host, Port: p}
			}
			return nil, err
		}
		return ln, nil
	}
}

func (s *Stack) openStore(ctx context.Context, dsn string) error {
	// The dev store is created when it is not there (dev, demo).
	st, err := dedup.Open(ctx, dsn, dedup.Options{Create: true})
	if err != nil {
		return fmt.Errorf("open the dev store %s: %w", redact.DSN(dsn), err)
	}
	if _, err := st.Migrate(ctx, false); err != nil {
		_ = st.Close()
		return fmt.Errorf("migrate the dev store %s: %w", redact.DSN(dsn), err)
	}
	s.store = st
	return nil
}

// removeStore deletes the SQLite store dsn names, with its journal files; a file that is not
// there is fine.
func removeStore(dsn string) error {
	path, ok := dedup.SQLitePath(dsn)
	if !ok {
		return fmt.Errorf("only an SQLite dev store can be started over, not %s", redact.DSN(dsn))
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("start the dev store over: %w", err)
		}
	}
	return nil
}

// earlierRunsCounted is how many journaled runs earlier counts at most.
const earlierRunsCounted = 1000

// earlier counts what st holds.
func earlier(ctx context.Context, st *dedup.Store) (Earlier, error) {
	var e Earlier
	stats, err := st.Stats(ctx, dedup.StatsFilter{})
	if err != nil {
		return e, err
	}
	for _, c := range stats.Consumers {
		e.Markers += c.Count
		e.Consumers++
	}
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Limit: earlierRunsCounted})
	if err != nil {
		return e, err
	}
	e.Runs = len(runs)
	return e, nil
}

// Store is the migrated dedup store (nil without a DSN). It is closed by Close.
func (s *Stack) Store() *dedup.Store { return s.store }

// Close stops the broker (its data is gone) and closes the store. It is safe to call more
// than once; later calls return the first call's result.
func (s *Stack) Close() error {
	s.once.Do(func() {
		if s.store != nil {
			if err := s.store.Close(); err != nil {
				s.err = fmt.Errorf("close the dev store: %w", err)
			}
		}
		if s.cluster != nil {
			s.cluster.Close()
		}
		if s.regSrv != nil {
			_ = s.regSrv.Close()
		}
	})
	return s.err
}
