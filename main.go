package main

import (
	"os"

	"github.com/fieldwork/fieldwork/cmd/root"
)

func main() { os.Exit(root.Main()) }
