//go:build race

package apicheck

func init() { buildFlags = append(buildFlags, "-race") }
