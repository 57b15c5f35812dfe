package dlq

// What the tests of package dlq_test check against.
var (
	Original  = dlqOriginal
	CSVHeader = func() []string {
		var names []string
		for _, c := range dlqCSVColumns {
			names = append(names, c.Name)
		}
		return names
	}()
)
