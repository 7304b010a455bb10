package transfer

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoFyne keeps the transfer model pure: it must not import Fyne, so its
// tables run without a GUI and the CLI could use it too.
func TestNoFyne(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "fyne.io/") {
			t.Errorf("ui/transfer depends on %s", dep)
		}
	}
}
