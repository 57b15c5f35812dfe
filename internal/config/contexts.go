package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// Names are the file's context names, sorted.
// Lookup is the context name of the file (nil: no file), or the usage error that it is not
// defined in where (the file's path, or a phrase) and names the ones that are.
func (f *File) Lookup(name, where string) (Context, error) {
	if f != nil {
		if c, ok := f.Contexts[name]; ok {
			return c, nil
		}
	}
	return Context{}, fwerr.NotFoundf("context %q is not defined in %s (known: %s)", name, where, f.Known())
}

// Known lists the names of the contexts, comma-separated, or says "none".
func (f *File) Known() string {
	if names := f.Names(); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "none"
}

func (f *File) Names() []string {
	if f == nil {
		return nil
	}
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Current is the context a command uses and where that choice comes from: the --context
// flag, then FIELDWORK_CONTEXT, then the file's current_context ("flag", "env", "file");
// "" and "" when none is chosen. Resolve uses the same rule.
func Current(fl Flags, getenv func(string) string, file *File) (name, from string) {
	switch {
	case fl.Context != "":
		return fl.Context, "flag"
	case getenv("FIELDWORK_CONTEXT") != "":
		return getenv("FIELDWORK_CONTEXT"), "env"
	case file != nil && file.CurrentContext != "":
		return file.CurrentContext, "file"
	}
	return "", ""
}

// Redacted is the context as it may be shown: the DSN and a token URL without their
// passwords (redact), everything else as written (the file holds no secret but in those two:
// passwords, tokens and client secrets are named by variable or file, never written).
func (c Context) Redacted() Context {
	c.DSN = redact.DSN(c.DSN)
	if c.SASL.TokenURL != "" {
		c.SASL.TokenURL = redact.URL(c.SASL.TokenURL)
	}
	if c.SchemaRegistry.URL != "" {
		c.SchemaRegistry.URL = redact.URL(c.SchemaRegistry.URL)
	}
	return c
}

// Use makes name the file's current_context, rewriting that one key and keeping the rest of
// the file (other keys, comments, order, indentation, quoting) as it is, byte for byte. The
// file must exist and define name.
func Use(path, name string) error {
	file, err := Load(path)
	if err != nil {
		return err
	}
	if _, err := file.Lookup(name, path); err != nil {
		return err
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fwerr.Usagef("no config file at %s", path)
	}
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fwerr.Usagef("parse config %s: %s", path, redact.Text(err.Error()))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fwerr.Usagef("config %s is not a mapping of keys", path)
	}
	out, err := setCurrent(b, &doc, name)
	if err != nil {
		return err
	}
	// Written beside the file and renamed over it, with its mode: a failure leaves the old file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	return nil
}

// setCurrent returns the config document b (parsed as doc, a mapping) with current_context set
// to name: its value replaced where it is written, or the key added as the first line, so that
// nothing else changes (a file kept in git shows a one-line diff). A value written in a way
// this cannot replace in place (over several lines, say) has the document written anew from
// its nodes, comments and order kept, indented by two.
func setCurrent(b []byte, doc *yaml.Node, name string) ([]byte, error) {
	m := doc.Content[0]
	quoted, err := yaml.Marshal(name)
	if err != nil {
		return nil, err
	}
	value := strings.TrimSuffix(string(quoted), "\n")
	var cur *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "current_context" {
			cur = m.Content[i+1]
		}
	}
	if cur == nil {
		return append([]byte("current_context: "+value+"\n"), b...), nil
	}
	if out, ok := replaceScalar(b, cur, value); ok {
		var check File
		if yaml.Unmarshal(out, &check) == nil && check.CurrentContext == name {
			return out, nil
		}
	}
	cur.SetString(name)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// replaceScalar replaces the one-line scalar n where b holds it (its line and column) by
// value; false when n is not such a scalar or b does not hold it there.
func replaceScalar(b []byte, n *yaml.Node, value string) ([]byte, bool) {
	if n.Kind != yaml.ScalarNode || n.Line < 1 || n.Column < 1 {
		return nil, false
	}
	start := 0
	for line := 1; line < n.Line; line++ {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			return nil, false
		}
		start += i + 1
	}
	start += n.Column - 1
	if start >= len(b) {
		return nil, false
	}
	rest := b[start:]
	if eol := bytes.IndexByte(rest, '\n'); eol >= 0 {
		rest = rest[:eol]
	}
	var end int
	switch n.Style {
	case 0:
		if !bytes.HasPrefix(rest, []byte(n.Value)) {
			return nil, false
		}
		end = start + len(n.Value)
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		q := rest[0]
		i := 1
		for ; i < len(rest); i++ {
			if rest[i] == '\\' && q == '"' {
				i++
				continue
			}
			if rest[i] == q {
				if q == '\'' && i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				break
			}
		}
		if i >= len(rest) {
			return nil, false
		}
		end = start + i + 1
	default:
		return nil, false
	}
	out := append(append(append([]byte(nil), b[:start]...), value...), b[end:]...)
	return out, true
}
