package core

import (
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
