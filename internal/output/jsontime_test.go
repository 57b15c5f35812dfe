package output

import "testing"

// TestNormalizeJSONTimes: the times of fieldwork's own fields are given in one form (UTC,
// milliseconds); a record's own data, free text and members that are not times are kept as
// they are.
func TestNormalizeJSONTimes(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"timestamp":"2026-12-02T08:13:30.91Z"}`, `{"timestamp":"2026-12-02T08:13:30.910Z"}`},
		{`{"failed_at":"2026-12-02T10:32:26.726468677Z","now":"2026-12-02T10:32:26Z"}`, `{"failed_at":"2026-12-02T10:32:26.726Z","now":"2026-12-02T10:32:26.000Z"}`},
		{`{"at": "2026-12-02T11:00:00.5+01:00"}`, `{"at": "2026-12-02T10:00:00.500Z"}`},
		{"[\n  {\n    \"oldest\": \"2026-12-02T10:00:00Z\",\n    \"x\": [1, \"2026-12-02T10:00:00Z\"]\n  }\n]", "[\n  {\n    \"oldest\": \"2026-12-02T10:00:00.000Z\",\n    \"x\": [1, \"2026-12-02T10:00:00Z\"]\n  }\n]"},
		// A record's own JSON, text that only looks like a time, names that are not times.
		{`{"value_json":{"time":"2026-12-02T10:00:00Z","d":{"updated_at":"2026-12-02T10:00:00Z"}},"time":"2026-12-02T10:00:00Z"}`, `{"value_json":{"time":"2026-12-02T10:00:00Z","d":{"updated_at":"2026-12-02T10:00:00Z"}},"time":"2026-12-02T10:00:00.000Z"}`},
		{`{"event":{"data":{"due_at":"2026-12-02T10:00:00Z"},"time":"2026-12-02T10:00:00Z"}}`, `{"event":{"data":{"due_at":"2026-12-02T10:00:00Z"},"time":"2026-12-02T10:00:00.000Z"}}`},
		{`{"reason":"2026-12-02T10:00:00Z","created_at":"yesterday","time":null}`, `{"reason":"2026-12-02T10:00:00Z","created_at":"yesterday","time":null}`},
		{`{"k\"time":"2026-12-02T10:00:00Z","key":"\"at\":\"2026-12-02T10:00:00Z\""}`, `{"k\"time":"2026-12-02T10:00:00Z","key":"\"at\":\"2026-12-02T10:00:00Z\""}`},
	}
	for _, tc := range cases {
		if got := string(normalizeJSONTimes([]byte(tc.in))); got != tc.want {
			t.Errorf("normalizeJSONTimes(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
