package testenv

import (
	"encoding/json"
	"testing"
)

// PlanNode is a node of PostgreSQL's EXPLAIN (FORMAT JSON) plan, the fields the plan tests
// read.
type PlanNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Filter    string     `json:"Filter"`
	Operation string     `json:"Operation"`
	Arbiters  []string   `json:"Conflict Arbiter Indexes"`
	Plans     []PlanNode `json:"Plans"`
	// With ANALYZE: the rows the node returned, per loop, and those it read and dropped.
	ActualRows      float64 `json:"Actual Rows"`
	ActualLoops     float64 `json:"Actual Loops"`
	RemovedByFilter float64 `json:"Rows Removed by Filter"`
}

// ExplainedPlan is the plan of one statement's EXPLAIN (FORMAT JSON) output: a list of one
// object, or that object alone (auto_explain's format).
func ExplainedPlan(t testing.TB, explained []byte) PlanNode {
	t.Helper()
	var plans []struct{ Plan PlanNode }
	if err := json.Unmarshal(explained, &plans); err != nil {
		var one struct{ Plan PlanNode }
		if err := json.Unmarshal(explained, &one); err != nil {
			t.Fatalf("EXPLAIN's JSON: %v", err)
		}
		return one.Plan
	}
	if len(plans) != 1 {
		t.Fatalf("EXPLAIN's JSON: %d plans, want 1", len(plans))
	}
	return plans[0].Plan
}
