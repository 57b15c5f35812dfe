package faults_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// A broker of the test's own (a one-node KRaft cluster through scripts/services.sh cluster,
// in a temporary directory) stopped cleanly and started again in the middle of a run; the
// store is the shared PostgreSQL.

// brokerRestart stops node 1 of c (SIGTERM, waiting for the process to exit) and starts it
// again once the run has met it.
func brokerRestart(c *testenv.KafkaCluster) fault {
	return fault{
		down: func() string { c.Stop(1); return "broker stopped (SIGTERM, process exited)" },
		up:   func() string { c.Start(1); return "broker started again and answering" },
	}
}

// TestBrokerRestartMidConsume: the broker goes away under `fieldwork consume` and comes back;
// the consumer must ride it out, lose nothing and double nothing.
func TestBrokerRestartMidConsume(t *testing.T) {
	dsn := testenv.DSN(t)
	k := testenv.StartKafkaCluster(t, 1)
	w := newWorld(t, k.Brokers(), 1, dsn)
	s := w.newStream(3, sample.Options{Seed: 101, Aggregates: 1000, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	report := w.consumeThroughFault(s, brokerRestart(k))
	t.Log("broker restart mid consume:\n  " + report)
}

// TestBrokerRestartMidReplay: the broker goes away under `fieldwork replay --execute` (and
// the consumer reading what it replays) and comes back.
func TestBrokerRestartMidReplay(t *testing.T) {
	dsn := testenv.DSN(t)
	k := testenv.StartKafkaCluster(t, 1)
	w := newWorld(t, k.Brokers(), 1, dsn)
	s := w.newStream(3, sample.Options{Seed: 102, Aggregates: 1200, EventsPerAggregate: 8, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	report := w.replayThroughFault(s, brokerRestart(k))
	t.Log("broker restart mid replay:\n  " + report)
}
