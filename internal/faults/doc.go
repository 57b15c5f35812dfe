// Package faults holds tests only: fieldwork's commands, run as the real binary against the
// real Kafka and PostgreSQL, while brokers, databases and consumers are stopped, killed and
// restarted under them. Each test states the invariant it checks (internal/testenv/invariant)
// and logs its figures.
//
// The tests need the services of scripts/services.sh start; the cluster tests start the
// three-node cluster of `scripts/services.sh cluster` themselves, and the tests that stop a
// broker or a database start a private one, never touching the services other tests share.
package faults
