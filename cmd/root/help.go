package root

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Help reads as gh's does: a command's help leads with the first paragraph of its
// description, then its usage, examples and flags; the rest of the description (its rules) is
// the help topic `fieldwork help details <command>`, and the connection flags (TLS, SASL,
// schema registry, config, timeouts), which every command accepts, are listed once, by
// `fieldwork help environment`. Everything is wrapped to the terminal's width, 80 columns when
// stdout is not a terminal (and at most 100 on a wide one, for reading).

// HelpWidth is the width help is wrapped to off a terminal.
const HelpWidth = 80

// maxHelpWidth bounds the width of help on a wide terminal: prose longer than this reads badly.
const maxHelpWidth = 100

// connectionAnnotation marks the persistent flags `fieldwork help environment` lists instead
// of every command's help.
const connectionAnnotation = "fieldwork_connection"

// markConnectionFlags marks every persistent flag of root but those of everyday use.
func markConnectionFlags(root *cobra.Command) {
	everyday := []string{"brokers", "context", "dsn", "output", "wide", "help"}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(everyday, f.Name) {
			_ = root.PersistentFlags().SetAnnotation(f.Name, connectionAnnotation, []string{"true"})
		}
	})
}

func isConnectionFlag(f *pflag.Flag) bool { return len(f.Annotations[connectionAnnotation]) > 0 }

func isStoreFlag(f *pflag.Flag) bool { return len(f.Annotations[cmdutil.StoreFlagAnnotation]) > 0 }

// storeFlags are the store-naming flags of the first command of the tree that has them.
func storeFlags(c *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("store", pflag.ContinueOnError)
	c.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if isStoreFlag(f) {
			fs.AddFlag(f)
		}
	})
	for _, sub := range c.Commands() {
		if fs.HasFlags() {
			break
		}
		fs = storeFlags(sub)
	}
	return fs
}

// helpWidth is the width help is wrapped to.
func helpWidth(f *cmdutil.Factory) int {
	if w := f.Streams.Width; f.Streams.OutTTY && w > 0 {
		return min(w, maxHelpWidth)
	}
	return HelpWidth
}

// installHelp sets root's help for the whole tree, adds the topics environment and details
// (one topic per command whose description has more than its first paragraph) and sets the
// usage printed after a usage error.
func installHelp(f *cmdutil.Factory, root *cobra.Command) {
	markConnectionFlags(root)
	env := &cobra.Command{
		Use:   "environment",
		Short: "Connection flags, FIELDWORK_* variables and contexts, which every command accepts",
		Long:  environmentHelp,
	}
	details := &cobra.Command{
		Use:   "details",
		Short: "The rules of each command, beyond its help: fieldwork help details <command>",
		Long: "Each command's help gives the first paragraph of its description. " +
			"`fieldwork help details <command>` gives the whole of it (the same text as the " +
			"reference pages of docs/reference and the man pages).",
	}
	addDetails(details, root)
	root.AddCommand(env, details)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		writeHelp(f.Streams.Out, c, helpWidth(f))
	})
}

// addDetails adds to parent a topic for each command under c whose description is longer
// than its first paragraph, named as the command, nested as the commands are.
func addDetails(parent, c *cobra.Command) {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		topic := &cobra.Command{Use: sub.Name(), Short: "The rules of " + sub.CommandPath(), Long: sub.Long}
		if _, rest := splitLong(sub.Long); rest == "" {
			topic.Long = ""
		}
		addDetails(topic, sub)
		if topic.Long == "" && !topic.HasSubCommands() {
			continue
		}
		if topic.Long == "" {
			topic.Long = "The rules of the commands of " + sub.CommandPath() + "."
		}
		parent.AddCommand(topic)
	}
}

// splitLong is a description's first paragraph and the rest.
func splitLong(long string) (first, rest string) {
	long = strings.TrimSpace(long)
	first, rest, _ = strings.Cut(long, "\n\n")
	return first, strings.TrimSpace(rest)
}

// writeHelp writes c's help, wrapped to width.
func writeHelp(w io.Writer, c *cobra.Command, width int) {
	var b strings.Builder
	isTopic := c.IsAdditionalHelpTopicCommand() || isDetailsTopic(c)
	first, rest := splitLong(c.Long)
	switch {
	case c.Long == "":
		b.WriteString(wrapText(c.Short, width))
	case isTopic || c == c.Root():
		b.WriteString(wrapText(strings.TrimSpace(c.Long), width))
	default:
		b.WriteString(wrapText(first, width))
	}
	b.WriteString("\n")
	if c.Name() == "environment" && c.Parent() == c.Root() {
		b.WriteString("\nConnection flags:\n")
		b.WriteString(flagUsages(connectionFlags(c.Root()), width))
		b.WriteString("\n" + wrapText("Marker table flags (the commands that read or write the dedup store's markers and journals):", width) + "\n")
		b.WriteString(flagUsages(storeFlags(c.Root()), width))
	}
	if c.Runnable() || c.HasAvailableSubCommands() {
		b.WriteString("\nUsage:\n")
		if c.Runnable() {
			b.WriteString(wrapExample("  "+c.UseLine(), width))
		}
		if c.HasAvailableSubCommands() && !strings.Contains(c.UseLine(), "command>") {
			b.WriteString("  " + c.CommandPath() + " <command> [flags]\n")
		}
	}
	if c.Example != "" {
		b.WriteString("\nExamples:\n")
		for _, line := range strings.Split(strings.TrimRight(c.Example, "\n"), "\n") {
			b.WriteString(wrapExample(line, width))
		}
	}
	writeCommands(&b, c, width)
	storeNaming := false
	local := pflag.NewFlagSet("local", pflag.ContinueOnError)
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		storeNaming = storeNaming || isStoreFlag(f)
		if !isStoreFlag(f) {
			local.AddFlag(f)
		}
	})
	if local.HasAvailableFlags() {
		b.WriteString("\nFlags:\n")
		b.WriteString(flagUsages(local, width))
	}
	inherited := pflag.NewFlagSet("global", pflag.ContinueOnError)
	keep := func(f *pflag.Flag) {
		storeNaming = storeNaming || isStoreFlag(f)
		if !isConnectionFlag(f) && !isStoreFlag(f) {
			inherited.AddFlag(f)
		}
	}
	c.InheritedFlags().VisitAll(keep)
	c.PersistentFlags().VisitAll(keep)
	if !isTopic && inherited.HasAvailableFlags() {
		b.WriteString("\nGlobal flags:\n")
		b.WriteString(flagUsages(inherited, width))
	}
	if !isTopic {
		writeLearnMore(&b, c, rest != "" && c != c.Root(), storeNaming, width)
	}
	_, _ = io.WriteString(w, b.String())
}

// writeLearnMore ends a command's help with where the rest is: the connection (and marker
// table) flags, the command's rules, its subcommands' help.
func writeLearnMore(b *strings.Builder, c *cobra.Command, rules, storeNaming bool, width int) {
	type line struct{ cmd, what string }
	env := "connection flags: TLS, SASL, schema registry, config file, timeouts"
	if storeNaming {
		env = "connection flags (TLS, SASL, schema registry, …) and marker table flags (--schema, --table, --column-*, --preset)"
	}
	lines := []line{{"fieldwork help environment", env}}
	if rules {
		lines = append(lines, line{"fieldwork help details " + strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), "the rules of this command"})
	}
	if c.HasAvailableSubCommands() {
		lines = append(lines, line{c.CommandPath() + " <command> --help", "a command's help"})
	}
	pad := 0
	for _, l := range lines {
		pad = max(pad, len(l.cmd))
	}
	b.WriteString("\nLearn more:\n")
	for _, l := range lines {
		b.WriteString(hanging(fmt.Sprintf("  %-*s  ", pad, l.cmd), l.what, width))
	}
}

// isDetailsTopic reports whether c is one of `fieldwork help details`' topics.
func isDetailsTopic(c *cobra.Command) bool {
	for p := c; p.HasParent(); p = p.Parent() {
		if p.Name() == "details" && p.Parent() == c.Root() {
			return true
		}
	}
	return false
}

// writeCommands lists c's subcommands and, on the root, its help topics.
func writeCommands(b *strings.Builder, c *cobra.Command, width int) {
	var cmds, topics []*cobra.Command
	for _, sub := range c.Commands() {
		switch {
		case sub.IsAvailableCommand() && !isDetailsTopic(sub) && sub.Name() != "details":
			cmds = append(cmds, sub)
		case sub.IsAdditionalHelpTopicCommand() || sub.Name() == "details" || isDetailsTopic(sub):
			topics = append(topics, sub)
		}
	}
	list := func(title string, cs []*cobra.Command) {
		if len(cs) == 0 {
			return
		}
		pad := 0
		for _, s := range cs {
			pad = max(pad, len(s.Name()))
		}
		b.WriteString("\n" + title + ":\n")
		for _, s := range cs {
			b.WriteString(hanging(fmt.Sprintf("  %-*s  ", pad, s.Name()), s.Short, width))
		}
	}
	list("Commands", cmds)
	list("Help topics", topics)
}

// connectionFlags are root's persistent flags that `fieldwork help environment` lists.
func connectionFlags(root *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if isConnectionFlag(f) {
			fs.AddFlag(f)
		}
	})
	return fs
}

// flagUsages is pflag's listing wrapped to width: names in one column and descriptions in
// the next; a name too long for its column (more than maxFlagColumn) has its description on
// the lines below, in the column.
func flagUsages(fs *pflag.FlagSet, width int) string {
	type row struct{ name, usage string }
	var rows []row
	col := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" {
			name += " " + varname
		}
		if d := f.DefValue; d != "" && d != "false" && d != "[]" && d != "0" && f.Value.Type() != "bool" {
			if f.Value.Type() == "string" {
				usage += fmt.Sprintf(" (default %q)", d)
			} else {
				usage += " (default " + d + ")"
			}
		}
		rows = append(rows, row{name, usage})
		if w := ansi.StringWidth(name); w <= maxFlagColumn {
			col = max(col, w)
		}
	})
	col += 3
	var b strings.Builder
	for _, r := range rows {
		if ansi.StringWidth(r.name) > maxFlagColumn {
			b.WriteString(r.name + "\n")
			b.WriteString(hanging(strings.Repeat(" ", col), r.usage, width))
			continue
		}
		b.WriteString(hanging(r.name+strings.Repeat(" ", col-ansi.StringWidth(r.name)), r.usage, width))
	}
	return b.String()
}

// maxFlagColumn is the widest a flag's name and type may be and have its description beside.
const maxFlagColumn = 28

// hanging writes text after head, wrapped to width, its later lines indented under the
// first's text (or by 10 columns when head is wide).
func hanging(head, text string, width int) string {
	indent := ansi.StringWidth(head)
	if indent > width/2 && strings.TrimSpace(head) != "" {
		var b strings.Builder
		b.WriteString(strings.TrimRight(head, " ") + "\n")
		b.WriteString(hanging(strings.Repeat(" ", 10), text, width))
		return b.String()
	}
	lines := output.Wrap(text, width-indent)
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(head + l + "\n")
			continue
		}
		b.WriteString(strings.Repeat(" ", indent) + l + "\n")
	}
	if len(lines) == 0 {
		b.WriteString(strings.TrimRight(head, " ") + "\n")
	}
	return b.String()
}

// listItem is a line that starts an item of its own in a paragraph: indented, a bullet or a
// number.
var listItem = regexp.MustCompile(`^(\s+|[-*] |\d+\. )`)

// wrapText reflows text to width, paragraph by paragraph: the lines of a paragraph are joined
// and wrapped again, except that a line starting with blanks, a bullet or a number starts an
// item of its own, whose later lines hang under its text.
func wrapText(text string, width int) string {
	var out []string
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var items []string
		for _, line := range strings.Split(para, "\n") {
			if len(items) == 0 || listItem.MatchString(line) {
				items = append(items, line)
				continue
			}
			items[len(items)-1] += " " + strings.TrimSpace(line)
		}
		var b strings.Builder
		for _, it := range items {
			head := listItem.FindString(it)
			b.WriteString(hanging(head, strings.TrimSpace(it[len(head):]), width))
		}
		out = append(out, strings.TrimRight(b.String(), "\n"))
	}
	return strings.Join(out, "\n\n")
}

// wrapExample writes an example line, at most width columns: a longer one is broken at blanks
// outside quotes, each line but the last ending in " \" (a shell continues it), the later
// ones indented by 4 more columns than the first.
func wrapExample(line string, width int) string {
	if ansi.StringWidth(line) <= width {
		return line + "\n"
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if comment, ok := strings.CutPrefix(strings.TrimLeft(line, " "), "# "); ok {
		return hanging(strings.Repeat(" ", indent)+"# ", comment, width)
	}
	words := shellWords(strings.TrimLeft(line, " "))
	var b strings.Builder
	cur := strings.Repeat(" ", indent)
	curW, fresh := indent, true
	for _, w := range words {
		ww := ansi.StringWidth(w)
		if !fresh && curW+1+ww+2 > width {
			b.WriteString(cur + " \\\n")
			cur, curW, fresh = strings.Repeat(" ", indent+4), indent+4, true
		}
		if !fresh {
			cur, curW = cur+" ", curW+1
		}
		cur, curW, fresh = cur+w, curW+ww, false
	}
	b.WriteString(cur + "\n")
	return b.String()
}

// shellWords splits a command line at blanks outside quotes, keeping the quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == ' ':
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// environmentHelp is `fieldwork help environment`'s text; the flags follow it.
const environmentHelp = `Every command connects the same way, and every command accepts the flags below; they are listed here once instead of in every command's help.

Connection settings come from flags, then FIELDWORK_* environment variables (each flag's variable is named below), then the current context of the config file ($XDG_CONFIG_HOME/fieldwork/config.yaml, or --config): fieldwork context list shows the contexts, fieldwork context use NAME chooses one, --context NAME chooses one for a command.

Secrets (SASL passwords and tokens, OAUTHBEARER client secrets, TLS key passwords, schema registry passwords and tokens) are read from a file named by a flag or from the environment, never from a flag's value, so that they stay out of the shell's history and the process list.

The everyday flags, shown in every command's help, are --brokers, --dsn, --context, -o/--output and --wide.`
