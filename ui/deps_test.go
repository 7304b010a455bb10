package ui

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoAppDriverImport keeps ui headless-testable: it must not pull in
// fyne.io/fyne/v2/app (and with it glfw and cgo).
func TestNoAppDriverImport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "fyne.io/fyne/v2/app" || strings.HasPrefix(dep, "github.com/go-gl/") {
			t.Errorf("ui depends on %s", dep)
		}
	}
}

// TestOnlyTheCodesOfTheEngine: ui takes the engine's result codes from the
// one table (engine/wire) and a device's ways to reach it as addresses by
// kind (engine/addr, the leaf package every layer shares), and nothing else
// of the engine: it renders what app hands it.
func TestOnlyTheCodesOfTheEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/ferrydrop/ferry/engine/wire", dep == "github.com/ferrydrop/ferry/engine/internal/errcode",
			dep == "github.com/ferrydrop/ferry/engine/addr":
		case strings.HasPrefix(dep, "github.com/ferrydrop/ferry/engine"):
			t.Errorf("ui depends on %s", dep)
		}
	}
}
