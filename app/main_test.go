package app

import (
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestMain fails the run if goroutines outlive the tests: the backend's
// engine, discovery and pumps stop with it.
func TestMain(m *testing.M) { testutil.Main(m) }
