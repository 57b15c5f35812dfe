package root_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// offsetBoundNames are the JSON field names of the bounds of an offset range, each with the
// one meaning it has in every command (docs/design.md §4, "Offsets in JSON"). end_offset is
// none of them: it meant the exclusive end in some commands and the inclusive one in others.
var offsetBoundNames = map[string]string{
	"start_offset":   "first offset, inclusive",
	"last_offset":    "last offset, inclusive",
	"high_watermark": "the partition's high watermark, exclusive",
}

// TestOffsetFieldNamesMeanOneThing runs every command whose JSON gives an offset range (inspect
// validate, processed check, a replay plan, its summary and replay show's checkpoints and
// selection) on one partition holding offsets 0 to 9, all of it selected, and checks that each
// field naming a bound of the range has one value in all of them: a name that meant the
// exclusive end in one command and the inclusive one in another has two.
func TestOffsetFieldNamesMeanOneThing(t *testing.T) {
	dsn, schema := testenv.DSN(t), testenv.PGSchema(t, "fwoff_")
	env := map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": dsn, "USER": "tester"}
	if r := roottest.Run(t, env, "db", "migrate", "--schema", schema); r.Code != 0 {
		t.Fatalf("db migrate: exit %d: %s", r.Code, r.Stderr)
	}
	src, dst := inspecttest.Topic(t, 1), inspecttest.Topic(t, 1)
	cl := inspecttest.Producer(t, src)
	for i := range 10 {
		testenv.Produce(t, cl, inspecttest.Rec(0, i, []byte("order-1"), inspecttest.Structured(fmt.Sprintf("evt-%d", i), "order.updated", "order-1", int64(i+1), `{}`)))
	}

	// values[name] maps each value a bound's name took to the commands that gave it.
	values := map[string]map[string][]string{}
	walk := func(what string, v any) {
		var visit func(v any)
		visit = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, isRange := v["start_offset"]; isRange {
					for name, x := range v {
						// offsets and lost_offsets are counts; log_start_offset is the partition's.
						if !strings.Contains(name, "offset") && name != "high_watermark" || slices.Contains([]string{"offsets", "lost_offsets", "log_start_offset"}, name) {
							continue
						}
						if values[name] == nil {
							values[name] = map[string][]string{}
						}
						s := fmt.Sprint(x)
						if !slices.Contains(values[name][s], what) {
							values[name][s] = append(values[name][s], what)
						}
					}
				}
				for _, x := range v {
					visit(x)
				}
			case []any:
				for _, x := range v {
					visit(x)
				}
			}
		}
		visit(v)
	}
	run := func(what string, codes []int, args ...string) []any {
		t.Helper()
		r := roottest.Run(t, env, args...)
		if !slices.Contains(codes, r.Code) {
			t.Fatalf("%s: exit %d, want one of %v:\n%s%s", what, r.Code, codes, r.Stdout, r.Stderr)
		}
		var docs []any
		dec := json.NewDecoder(bytes.NewBufferString(r.Stdout))
		for {
			var v any
			if err := dec.Decode(&v); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: stdout is not JSON: %v\n%s", what, err, r.Stdout)
			}
			walk(what, v)
			docs = append(docs, v)
		}
		if len(docs) == 0 {
			t.Fatalf("%s: no JSON on stdout:\n%s", what, r.Stderr)
		}
		return docs
	}

	run("inspect validate", []int{0, 3}, "inspect", "validate", src, "-o", "json")
	run("processed check", []int{0, 3}, "processed", "check", "--topic", src, "--consumer", "billing", "--schema", schema, "-o", "json")
	run("replay plan", []int{0}, "replay", "--topic", src, "--to", dst, "--start-offset", "0", "--end-offset", "9", "--schema", schema, "-o", "json")
	docs := run("replay", []int{0}, "replay", "--topic", src, "--to", dst, "--start-offset", "0", "--end-offset", "9", "--schema", schema,
		"--execute", "--yes", "--reason", "offset names", "-o", "json")
	runID, _ := docs[len(docs)-1].(map[string]any)["run_id"].(string)
	if runID == "" {
		t.Fatalf("replay: no run_id in %v", docs)
	}
	run("replay show", []int{0}, "replay", "show", runID, "--schema", schema, "-o", "json")

	var problems []string
	for name, byValue := range values {
		if _, known := offsetBoundNames[name]; !known {
			problems = append(problems, fmt.Sprintf("%s is not a name of the offset vocabulary (%v)", name, byValue))
		}
		if len(byValue) > 1 {
			var said []string
			for v, whats := range byValue {
				said = append(said, fmt.Sprintf("%s in %s", v, strings.Join(whats, ", ")))
			}
			sort.Strings(said)
			problems = append(problems, fmt.Sprintf("%s means two things for offsets 0 to 9: %s", name, strings.Join(said, "; ")))
		}
	}
	for name, want := range map[string]string{"start_offset": "0", "last_offset": "9", "high_watermark": "10"} {
		if _, ok := values[name][want]; !ok {
			problems = append(problems, fmt.Sprintf("%s (%s) is never %s: %v", name, offsetBoundNames[name], want, values[name]))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}
