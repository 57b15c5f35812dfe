package config

import (
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
// the file (other keys, comments, order) as it is. The file must exist and define name.
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
	m := doc.Content[0]
	set := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "current_context" {
			m.Content[i+1].SetString(name)
			set = true
		}
	}
	if !set {
		var k, v yaml.Node
		k.SetString("current_context")
		v.SetString(name)
		m.Content = append([]*yaml.Node{&k, &v}, m.Content...)
	}
	out, err := yaml.Marshal(&doc)
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
