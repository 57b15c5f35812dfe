package wording

import "testing"

func TestCounts(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Plural(0, "record"), "0 records"},
		{Plural(1, "record"), "1 record"},
		{Plural(-2, "record"), "-2 records"},
		{Plural(1234, "marker"), "1234 markers"},
		{Count(1, "duplicate was", "duplicates were"), "1 duplicate was"},
		{Count(3, "duplicate was", "duplicates were"), "3 duplicates were"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
