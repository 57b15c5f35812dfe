package dlq

// What the tests of package dlq_test check against.
var (
	Original  = dlqOriginal
	CSVHeader = dlqCSVHeader
)
