package demo

import (
	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/devstack"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// Narrator tells the story as it happens. The demo calls it from one goroutine, in order:
// Step, then for each command it stands for Command, the command's Result, and Say for what
// the reader should notice. Rendering is the narrator's business (cmd renders tables and
// prose); the demo only hands over data and plain sentences.
type Narrator interface {
	// Step starts a step of the story.
	Step(n int, title string)
	// Command is the command line the next part of the step stands for, as a reader would
	// type it (without the "$ ").
	Command(line string)
	// Result is what that command found or did.
	Result(r Result)
	// Say is one paragraph of prose.
	Say(text string)
}

// Result is one of the *Result types of this package.
type Result interface{ isResult() }

// SeedResult is what step 1 produced.
type SeedResult struct {
	Seeded  *devstack.Seeded
	Brokers string
	DSN     string
}

// ConsumeResult is one run of the reference consumer.
type ConsumeResult struct{ ConsumeRun }

// DeadLettersResult is a `dlq list`: the entries, in topic, partition and offset order.
type DeadLettersResult struct {
	Entries []dlq.Entry
	// Statuses is the --status filter the listing stands for (nil: every status).
	Statuses []dlq.Status
}

// DeadLetterStatsResult is a `dlq stats --group-by reason`.
type DeadLetterStatsResult struct{ Report *dlq.StatsReport }

// ReplayPlanResult is a replay's dry run.
type ReplayPlanResult struct{ Report *replay.Report }

// ReplayRunResult is an executed replay.
type ReplayRunResult struct{ Summary *replay.Summary }

// ProcessedStatsResult is `processed stats`.
type ProcessedStatsResult struct {
	Stats dedup.Stats
	Table string
}

func (*SeedResult) isResult()            {}
func (*ConsumeResult) isResult()         {}
func (*DeadLettersResult) isResult()     {}
func (*DeadLetterStatsResult) isResult() {}
func (*ReplayPlanResult) isResult()      {}
func (*ReplayRunResult) isResult()       {}
func (*ProcessedStatsResult) isResult()  {}

// silent is the Narrator when none is given.
type silent struct{}

func (silent) Step(int, string) {}
func (silent) Command(string)   {}
func (silent) Result(Result)    {}
func (silent) Say(string)       {}

// statsOf is consumer.Stats without the fields the demo does not report.
func statsOf(s consumer.Stats) ConsumeStats {
	return ConsumeStats{
		Records: s.Records, Applied: s.Processed, Duplicates: s.Duplicates, Stale: s.Stale,
		DeadLettered: s.DeadLettered, Retried: s.Retried, Batches: s.Batches,
	}
}
