package root

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
)

// TestFactoryHoldsNoFlag: the factory hands out clients and settings and holds no flag's
// value. The root binds its persistent flags into its own Settings, a command group its
// --schema/--table/--column-* into its own dedup.Options: no flag of the tree is bound to a
// variable inside the Factory that every command shares.
func TestFactoryHoldsNoFlag(t *testing.T) {
	f := cmdutil.TestFactory()
	tree := NewCmdRoot(f)
	start := reflect.ValueOf(f).Pointer()
	end := start + reflect.TypeOf(*f).Size()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(fl *pflag.Flag) {
			v := reflect.ValueOf(fl.Value)
			if v.Kind() != reflect.Pointer {
				return
			}
			if p := v.Pointer(); p >= start && p < end {
				t.Errorf("%s: --%s is bound into the Factory", c.CommandPath(), fl.Name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree)
}
