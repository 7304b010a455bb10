package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGUIDependencies keeps the layering visible: the engine and discovery
// are plain Go, and the GUI is only one of their clients.
func TestNoGUIDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ferrydrop/ferry/engine/...", "github.com/ferrydrop/ferry/discovery/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "fyne.io/") || strings.HasPrefix(d, "github.com/ferrydrop/ferry/ui") || strings.HasPrefix(d, "github.com/ferrydrop/ferry/app") {
			t.Errorf("engine or discovery depends on %s", d)
		}
	}
}
