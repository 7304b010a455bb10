package peer

import (
	"os/exec"
	"strings"
	"testing"
)

// Every protocol package and the stores import peer: it must stay plain
// data on the standard library, importing nothing of the module.
func TestOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if d != "github.com/ferrydrop/ferry/engine/peer" {
			t.Errorf("package peer depends on %s", d)
		}
	}
}
