package inspect

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// TestValidateResult: a clean lint is no error; problems are a check error (exit 3) that
// counts them by kind, in the summary's order, leaving out the kinds not found.
func TestValidateResult(t *testing.T) {
	if err := (&ValidateReport{Topic: "tasks"}).Result(); err != nil {
		t.Fatalf("clean: %v", err)
	}
	rep := &ValidateReport{Topic: "tasks", Problems: 4, Summary: []KindCount{
		{Kind: KindMalformed, Count: 3}, {Kind: KindMissingVersion, Count: 0}, {Kind: KindSplitAggregate, Count: 1},
	}}
	err := rep.Result()
	if fwerr.KindOf(err) != fwerr.KindCheck || err.Error() != "4 in tasks (3 malformed, 1 split_aggregate)" {
		t.Fatalf("problems: %v (kind %v)", err, fwerr.KindOf(err))
	}
}
