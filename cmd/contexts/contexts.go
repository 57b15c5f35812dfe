// Package contexts is the context command group: the named contexts of the config file,
// which one is in use, and switching to another (docs/design.md §4).
package contexts

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

const contextLong = `A context is a named set of connection settings in the config file
($XDG_CONFIG_HOME/fieldwork/config.yaml, --config or FIELDWORK_CONFIG): brokers, TLS, SASL
and the store's DSN. The one in use is --context, else FIELDWORK_CONTEXT, else the file's
current_context. Flags and FIELDWORK_* variables still beat each of its settings.

  context list          every context; * marks the one in use
  context current       the name of the context in use (exit 1 when none)
  context show [NAME]   a context's settings (default the one in use); secrets redacted
  context use NAME      make NAME the file's current_context

Passwords, tokens and client secrets are never written in the file (it names the variable or
file that holds them); what a DSN or a token URL holds is shown redacted.`

// NewCmdContext is the context group.
func NewCmdContext(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroup("context <command>", "List, show and switch the config file's named contexts", contextLong,
		newCmdList(f), newCmdCurrent(f), newCmdShow(f), newCmdUse(f))
	return cmd
}

// contextView is one context as shown: its settings redacted.
type contextView struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	config.Context
}

func load(f *cmdutil.Factory) (path string, file *config.File, current, from string, err error) {
	path, file, err = f.ConfigFile()
	if err != nil {
		return "", nil, "", "", err
	}
	current, from = config.Current(f.Conn, f.Getenv, file)
	return path, file, current, from, nil
}

func newCmdList(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Every context of the config file; * marks the one in use",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, file, current, _, err := load(f)
			if err != nil {
				return err
			}
			p, err := f.Printer()
			if err != nil {
				return err
			}
			var views []contextView
			for _, n := range file.Names() {
				views = append(views, contextView{Name: n, Current: n == current, Context: file.Contexts[n].Redacted()})
			}
			return output.List(p, views, listColumns, "no contexts in "+path)
		},
	}
}

var listColumns = []output.Column[contextView]{
	{Name: "current", Value: func(v contextView) string {
		if v.Current {
			return "*"
		}
		return ""
	}},
	{Name: "name", Value: func(v contextView) string { return v.Name }},
	{Name: "brokers", Value: func(v contextView) string { return cmdutil.OrDash(strings.Join(v.Brokers, ",")) }},
	{Name: "dsn", Value: func(v contextView) string { return cmdutil.OrDash(v.DSN) }},
}

func newCmdCurrent(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "current",
		Short: "The name of the context in use, and where that choice comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _, current, from, err := load(f)
			if err != nil {
				return err
			}
			if current == "" {
				return fmt.Errorf("no context in use: %s sets no current_context, and neither --context nor FIELDWORK_CONTEXT is given (fieldwork context use NAME sets one)", path)
			}
			p, err := f.Printer()
			if err != nil {
				return err
			}
			// The bare name unless -o asks for more: what a shell prompt or a script reads.
			if f.OutputFormat == "" || p.Format == output.FormatTable {
				fmt.Fprintln(f.Streams.Out, current)
				return nil
			}
			return p.Object(struct {
				Name string `json:"name"`
				From string `json:"from"`
			}{current, from}, []output.Section{{Fields: [][2]string{{"name", current}, {"from", from}}}})
		},
	}
}

func newCmdShow(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show [NAME]",
		Short: "A context's settings, secrets redacted (default the one in use)",
		Args:  cmdutil.MaxArgs(1, "the name of one context"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, file, current, _, err := load(f)
			if err != nil {
				return err
			}
			name := current
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return fwerr.Usagef("no context in use: name one (fieldwork context show NAME; known: %s)", orNone(file.Names()))
			}
			c, ok := file.Contexts[name]
			if !ok {
				return fwerr.Usagef("context %q is not defined in %s (known: %s)", name, path, orNone(file.Names()))
			}
			p, err := f.Printer()
			if err != nil {
				return err
			}
			v := contextView{Name: name, Current: name == current, Context: c.Redacted()}
			return p.Object(v, showSections(v))
		},
	}
}

func showSections(v contextView) []output.Section {
	c := v.Context
	fields := [][2]string{
		{"name", v.Name}, {"in use", fmt.Sprint(v.Current)},
		{"brokers", cmdutil.OrDash(strings.Join(c.Brokers, ","))}, {"dsn", cmdutil.OrDash(c.DSN)},
	}
	add := func(k, val string) {
		if val != "" {
			fields = append(fields, [2]string{k, val})
		}
	}
	add("dsn_password_env", c.DSNPasswordEnv)
	add("dsn_password_file", c.DSNPasswordFile)
	if c.TLS.Enabled || c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.PKCS12File != "" {
		fields = append(fields, [2]string{"tls", "on"})
	}
	add("tls.ca_file", c.TLS.CAFile)
	add("tls.cert_file", c.TLS.CertFile)
	add("tls.key_file", c.TLS.KeyFile)
	add("tls.pkcs12_file", c.TLS.PKCS12File)
	add("tls.key_password_env", c.TLS.KeyPasswordEnv)
	add("tls.key_password_file", c.TLS.KeyPasswordFile)
	add("tls.server_name", c.TLS.ServerName)
	if c.TLS.InsecureSkipVerify {
		fields = append(fields, [2]string{"tls.insecure_skip_verify", "true"})
	}
	add("sasl.mechanism", c.SASL.Mechanism)
	add("sasl.username", c.SASL.Username)
	add("sasl.password_env", c.SASL.PasswordEnv)
	add("sasl.password_file", c.SASL.PasswordFile)
	add("sasl.token_env", c.SASL.TokenEnv)
	add("sasl.token_file", c.SASL.TokenFile)
	add("sasl.token_url", c.SASL.TokenURL)
	add("sasl.client_id", c.SASL.ClientID)
	add("sasl.client_secret_env", c.SASL.ClientSecretEnv)
	add("sasl.client_secret_file", c.SASL.ClientSecretFile)
	add("sasl.scope", c.SASL.Scope)
	return []output.Section{{Title: "Context " + v.Name, Fields: fields}}
}

func newCmdUse(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "use NAME",
		Short: "Make NAME the config file's current_context (the rest of the file is kept)",
		Args:  cmdutil.ExactArgs(1, "the name of the context to use"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _, _, _, err := load(f)
			if err != nil {
				return err
			}
			if err := config.Use(path, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.Streams.ErrOut, "current context: %s (in %s)\n", args[0], path)
			return nil
		},
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
