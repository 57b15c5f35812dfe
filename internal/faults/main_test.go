package faults_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
