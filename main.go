package main

import (
	"os"

	"github.com/fieldwork/fieldwork/cmd/root"
)

// profiled runs the command; built with the pprof tag (profile.go) it also writes profiles.
var profiled = func(run func() int) int { return run() }

func main() { os.Exit(profiled(root.Main)) }
