package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// ExactArgs is cobra.ExactArgs with a message that names the arguments expected.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fwerr.Usagef("%s takes %s (got %s)", cmd.CommandPath(), what, wording.Plural(int64(len(args)), "argument"))
		}
		return nil
	}
}

// CheckGroup refuses a consumer group argument that names none (groups describe "$G" with G
// unset), before anything connects: Kafka would answer INVALID_GROUP_ID.
func CheckGroup(name string) error {
	if strings.TrimSpace(name) == "" {
		return fwerr.Usagef("the consumer group name is empty: name the group (groups list shows them)")
	}
	return nil
}

// MaxArgs refuses more than n arguments, with a message that names what may be given.
func MaxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return fwerr.Usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// TopicVar defines the flag --name that takes one topic name, refused where it is parsed
// when Kafka would refuse it (kafka.CheckTopic: empty, too long, a character a topic cannot
// have), so that every command says so the same way, exit 2, before anything connects.
func TopicVar(fs *pflag.FlagSet, p *string, name, usage string) {
	fs.VarP(&topicValue{one: p}, name, Shorthand(name), usage)
}

// shorthands are the one-letter forms of the flags every operator types, the same in every
// command that has the flag: -t the topic read, -g the consumer group, -n how many.
var shorthands = map[string]string{"topic": "t", "group": "g", "limit": "n", "count": "n", "last": "n"}

// Shorthand is the one-letter form of the flag name ("" when it has none): every command
// defines a flag of that name with it.
func Shorthand(name string) string { return shorthands[name] }

// TopicsVar is TopicVar of a flag that may be repeated (--topic a --topic b); comma, when
// set, also splits a value at commas (--topic a,b).
func TopicsVar(fs *pflag.FlagSet, p *[]string, name, usage string, comma bool) {
	fs.VarP(&topicValue{many: p, comma: comma}, name, Shorthand(name), usage)
}

// topicValue is pflag's Value of TopicVar and TopicsVar.
type topicValue struct {
	one   *string
	many  *[]string
	comma bool
}

// listItems is a flag value's items: split at commas when the flag takes comma-separated
// lists, else the value whole.
func listItems(s string, comma bool) []string {
	if comma {
		return strings.Split(s, ",")
	}
	return []string{s}
}

func (v *topicValue) Set(s string) error {
	names := listItems(s, v.comma)
	for _, n := range names {
		if p := kafka.TopicProblem(strings.TrimSpace(n)); p != "" {
			if len(names) > 1 {
				return fwerr.Usagef("%q: %s", n, p)
			}
			return fwerr.Usagef("%s", p)
		}
	}
	if v.one != nil {
		*v.one = strings.TrimSpace(s)
		return nil
	}
	for _, n := range names {
		*v.many = append(*v.many, strings.TrimSpace(n))
	}
	return nil
}

func (v *topicValue) String() string {
	if v.one != nil {
		return *v.one
	}
	if v.many == nil || len(*v.many) == 0 {
		return "" // no default shown in help, as for pflag's own empty lists
	}
	return "[" + strings.Join(*v.many, ",") + "]"
}

// Type names the value in help as pflag's own string, stringArray and strings flags do.
func (v *topicValue) Type() string {
	switch {
	case v.one != nil:
		return "string"
	case v.comma:
		return "strings"
	}
	return "stringArray"
}

// LimitVar defines --limit, the one "at most this many" of every listing (dlq list, the
// journals, replay runs, processed list): a whole number, 0 for no limit, refused where it is
// parsed when negative. maxPage, when above 0, is for a listing read a page at a time
// (processed list): there --limit is the page, from 1 to maxPage, and readOn says how to
// read past it.
func LimitVar(fs *pflag.FlagSet, p *int, def int, noun string, maxPage int, readOn string) {
	usage := fmt.Sprintf("at most this many %s (0: no limit)", noun)
	if maxPage > 0 {
		usage = fmt.Sprintf("at most this many %s, one page (1..%d; %s)", noun, maxPage, readOn)
	}
	intVar(fs, p, "limit", def, usage, func(n int) error {
		switch {
		case n < 0:
			return fwerr.Usagef("must be 0 (no limit) or more")
		case maxPage > 0 && (n < 1 || n > maxPage):
			return fwerr.Usagef("must be between 1 and %d: this listing is read a page at a time (%s)", maxPage, readOn)
		}
		return nil
	})
}

// PortVar defines --port, the port of a broker fieldwork serves on 127.0.0.1 (dev, demo):
// 0 (any free port) to 65535, refused where it is parsed otherwise.
func PortVar(fs *pflag.FlagSet, p *int, def int) {
	intVar(fs, p, "port", def, "port of the broker on 127.0.0.1 (0: any free port)", func(n int) error {
		if n < 0 || n > 65535 {
			return fwerr.Usagef("must be between 0 (any free port) and 65535")
		}
		return nil
	})
}

// CountVar defines the count flag --name: a whole number of at least 1, so that "how many"
// flags (--batch-size, --max-events, --count, …) refuse 0 and negatives where
// they are parsed, with one message, and a command never checks one itself.
func CountVar(fs *pflag.FlagSet, p *int, name string, def int, usage string) {
	intVar(fs, p, name, def, usage, func(n int) error {
		if n < 1 {
			return fwerr.Usagef("must be at least 1")
		}
		return nil
	})
}

// intVar defines --name, a whole number that check accepts, refused where it is parsed: the
// one Value of CountVar, LimitVar and PortVar.
func intVar(fs *pflag.FlagSet, p *int, name string, def int, usage string, check func(int) error) {
	*p = def
	fs.VarP(&intValue{p: p, check: check}, name, Shorthand(name), usage)
}

// intValue is pflag's Value of intVar.
type intValue struct {
	p     *int
	check func(int) error
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fwerr.Usagef("want a whole number")
	}
	if err := v.check(n); err != nil {
		return err
	}
	*v.p = n
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(*v.p) }

// Type names the value in help: "int", like pflag's own.
func (v *intValue) Type() string { return "int" }

// ShareVar defines --name, a share of a whole: a number more than 0 and at most 1 (0.5), or
// a percentage (50%), refused where it is parsed otherwise. ShareOrNoneVar also takes 0.
func ShareVar(fs *pflag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(&shareValue{p: p}, name, usage)
}

// ShareOrNoneVar is ShareVar for a share that may be 0 (none at all): 0 to 1, or 0% to 100%.
func ShareOrNoneVar(fs *pflag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(&shareValue{p: p, zero: true}, name, usage)
}

// shareValue is pflag's Value of ShareVar and ShareOrNoneVar (zero: 0 is a share).
type shareValue struct {
	p    *float64
	zero bool
}

func (v *shareValue) Set(s string) error {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	least := "more than 0"
	if v.zero {
		least = "from 0"
	}
	if err != nil {
		return fwerr.Usagef("want a share: a number %s and at most 1 (0.5), or a percentage (50%%)", least)
	}
	if pct {
		f /= 100
	}
	if !((f > 0 || v.zero && f == 0) && f <= 1) {
		return fwerr.Usagef("must be %s and at most 1 (100%%)", least)
	}
	*v.p = f
	return nil
}

func (v *shareValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }

// Type names the value in help.
func (v *shareValue) Type() string { return "share" }

// NoArgs refuses arguments, as cobra.NoArgs does; to a command that reads its topic with
// --topic, an argument that could be a topic is answered with the flag (`processed check
// tasks`: name the topic with --topic tasks), not as an unknown command.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.Flags().Lookup("topic") != nil && kafka.CheckTopic(args[0]) == nil {
		return fwerr.Usagef("%s takes no arguments: name the topic with --topic %s", cmd.CommandPath(), args[0])
	}
	return cobra.NoArgs(cmd, args)
}

// TopicArg is the topic a command reads (inspect topic TOPIC), named as its one argument or,
// as the commands that read a topic name it, with --topic (-t): it defines the flag and the
// command's Args, which refuse none, two, or an argument and a flag that name different
// topics, and put the topic in *p.
func TopicArg(cmd *cobra.Command, p *string, usage string) {
	TopicArgThen(cmd, p, usage, "", nil)
}

// TopicArgThen is TopicArg for a command that takes one more argument after the topic (inspect
// aggregate TOPIC AGGREGATE_ID, or --topic TOPIC AGGREGATE_ID): what names it in errors, and
// it is put in *rest. With what empty there is none (TopicArg).
func TopicArgThen(cmd *cobra.Command, p *string, usage, what string, rest *string) {
	TopicVar(cmd.Flags(), p, "topic", usage+" (or as the argument)")
	takes := "one topic"
	if what != "" {
		takes = "a topic and " + what
		cmd.Flags().Lookup("topic").Usage = usage + " (or as the first argument)"
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if what != "" {
			if len(args) == 0 || len(args) > 2 || len(args) == 1 && *p == "" {
				return fwerr.Usagef("%s takes %s: two arguments, or --topic and one (got %s)", cmd.CommandPath(), takes, wording.Plural(int64(len(args)), "argument"))
			}
			*rest, args = args[len(args)-1], args[:len(args)-1]
		}
		switch {
		case len(args) > 1:
			return fwerr.Usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), takes, len(args))
		case len(args) == 1:
			if err := kafka.CheckTopic(args[0]); err != nil {
				return err
			}
			if *p != "" && *p != args[0] {
				return fwerr.Usagef("%s takes one topic: the argument names %s, --topic %s", cmd.CommandPath(), args[0], *p)
			}
			*p = args[0]
		case *p == "":
			return fwerr.Usagef("%s takes one topic, as its argument or with --topic (got none)", cmd.CommandPath())
		}
		return nil
	}
}

// OneValueEach makes every flag of cmd and of the commands under it that holds one value
// refuse a second, different value on one command line (--topic a --topic b, --consumer a
// --consumer b: exit 2), where pflag would keep the last unseen and the command answer for
// it alone, while a flag that other commands, or this one, take repeated (--topic of consume,
// --dlq-reason) holds them all. The same value twice is one value. Run on the whole tree once
// its flags are defined (NewCmdRoot).
func OneValueEach(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*oneValue); !done && !repeatable(f.Value.Type()) {
			f.Value = &oneValue{Value: f.Value}
		}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, c := range cmd.Commands() {
		OneValueEach(c)
	}
}

// nonEmptyFlags are the flags that an empty value would silently turn into something else
// than what was asked, the same in every command. Most narrow what a command reads or acts
// on (the dead-letter filters, the statuses, the topic pattern, the aggregate, the file of
// records or ids, the group the records are for): given empty (--event-id "$ID" with ID
// unset in a runbook) each would select everything instead of nothing, and replay --event-id
// "" --execute would send a whole dead-letter topic. The others would do another thing: the
// original value sent instead of the edited one (--value-file), the first page read again
// (--cursor), no undo (--undo). So an empty value, or an empty item of a list, is refused as
// the flags are read (exit 2). --key is not among them: --key "" selects the records whose
// key is empty.
var nonEmptyFlags = map[string]string{
	"group":       "a consumer group",
	"for-group":   "a consumer group",
	"event-id":    "an event id",
	"fingerprint": "a fingerprint of dlq stats --by fingerprint",
	"dlq-reason":  "a reason",
	"status":      "a status",
	"aggregate":   "an aggregate id",
	"error":       "a regular expression",
	"pattern":     "a regular expression",
	"from-file":   "a file (- for stdin)",
	"value-file":  "the file of the record's new value",
	"cursor":      "the cursor processed list printed",
	"undo":        "the run id of the action to undo",
}

// RefuseEmptyValues makes every flag of nonEmptyFlags, in cmd and the commands under it,
// refuse an empty value. Run on the whole tree once its flags are defined (NewCmdRoot).
func RefuseEmptyValues(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if what, ok := nonEmptyFlags[f.Name]; ok {
			if _, done := f.Value.(*nonEmpty); !done {
				f.Value = &nonEmpty{Value: f.Value, what: what, list: repeatable(f.Value.Type())}
				if f.DefValue == "[]" {
					f.DefValue = "" // help shows no default for an empty list, as for pflag's own
				}
			}
		}
	}
	cmd.Flags().VisitAll(wrap)
	for _, c := range cmd.Commands() {
		RefuseEmptyValues(c)
	}
}

// nonEmpty is a flag's Value under RefuseEmptyValues: it refuses "" (and, for a
// list, an empty item: --dlq-reason rejected,).
type nonEmpty struct {
	pflag.Value
	what string
	list bool
}

func (v *nonEmpty) Set(s string) error {
	for _, it := range listItems(s, v.list) {
		if strings.TrimSpace(it) == "" {
			return fwerr.Usagef("empty: name %s, or leave the flag out", v.what)
		}
	}
	return v.Value.Set(s)
}

// repeatable reports whether a flag of pflag type typ holds every value it is given: pflag's
// slices and arrays, and TopicsVar's.
func repeatable(typ string) bool {
	return typ == "strings" || strings.HasSuffix(typ, "Slice") || strings.HasSuffix(typ, "Array") || typ == "stringToString"
}

// oneValue is a one-value flag's Value under OneValueEach: the first value it was given, and
// the flag's own Value (its Type and String are the flag's).
type oneValue struct {
	pflag.Value
	given *string
}

func (v *oneValue) Set(s string) error {
	if v.given != nil && *v.given != s {
		return fwerr.Usagef("the flag takes one value, and %q came first (give it once)", *v.given)
	}
	if err := v.Value.Set(s); err != nil {
		return err
	}
	v.given = &s
	return nil
}

// FlagValue is f's own Value, under OneValueEach's and RefuseEmptyValues'.
func FlagValue(f *pflag.Flag) pflag.Value {
	v := f.Value
	if o, ok := v.(*oneValue); ok {
		v = o.Value
	}
	if n, ok := v.(*nonEmpty); ok {
		v = n.Value
	}
	return v
}
