package faults_test

import (
	"os"
	"testing"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveFieldwork()
	os.Exit(code)
}
