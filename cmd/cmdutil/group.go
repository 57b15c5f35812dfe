package cmdutil

import "github.com/spf13/cobra"

// NewGroup returns a command group: use, short and long are its help, subs its commands in
// the order help lists them. Without a command it prints its help; with one it does not
// know, it suggests the subcommands close to it (SubcommandArgs).
func NewGroup(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  SubcommandArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}
