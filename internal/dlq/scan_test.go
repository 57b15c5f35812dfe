package dlq

import "testing"

// TestDefaultTopicPattern: the names dead-letter topics are given by the libraries and by
// habit are found, and a few that are not dead-letter topics are not.
func TestDefaultTopicPattern(t *testing.T) {
	for _, name := range []string{
		"tasks.dlq", "orders.DLT", "orders-dlt", "events-dlq", "orders_dlq", "payments_poison", "orders.deadletter",
		"orders-dead-letter", "wolverine-dead-letter-queue", "orders-retry", "orders-retry-0", "orders-retry-5000",
		"dlq-s3-sink", "dlq_file_sink_02", "DLQ.orders", "deadletter-orders", "Orders.Dlq",
	} {
		if !DefaultTopicPattern.MatchString(name) {
			t.Errorf("%s is not found", name)
		}
	}
	for _, name := range []string{"orders", "dlq", "orders-dlq-archive", "retry", "orders-retry-x", "poisoned-orders", "__consumer_offsets", "orders.dlqs"} {
		if DefaultTopicPattern.MatchString(name) {
			t.Errorf("%s is found", name)
		}
	}
}
