package main

import (
	"os"

	"github.com/fieldwork/fieldwork/cmd"
)

func main() { os.Exit(cmd.Main()) }
