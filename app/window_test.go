package app

import (
	"math"
	"testing"

	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui"
)

// The window's size was not kept across a restart (it came back at
// 980 × 640 whatever the user made it, seen on screen): it is saved in the
// settings on close and restored at start, within the screen (a size
// saved on a larger screen must not put the window's edges out of reach)
// and not below the UI's smallest.
func TestWindowSizeIsKeptAcrossARestartWithinTheScreen(t *testing.T) {
	dir := t.TempDir()
	st, err := openSettings(dir, ui.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowSize(st.get(), fyne.NewSize(1920, 1080)); got != defaultWindow {
		t.Errorf("first start: %v, want the default %v", got, defaultWindow)
	}
	if err := saveWindowSize(st, fyne.NewSize(1200, 800)); err != nil {
		t.Fatal(err)
	}
	again, err := openSettings(dir, ui.Settings{}) // the next start
	if err != nil {
		t.Fatal(err)
	}
	s := again.get()
	for _, c := range []struct {
		name         string
		saved        fyne.Size
		screen, want fyne.Size
	}{
		{"kept", fyne.NewSize(s.WindowWidth, s.WindowHeight), fyne.NewSize(1920, 1080), fyne.NewSize(1200, 800)},
		{"screen not known", fyne.NewSize(1200, 800), fyne.Size{}, fyne.NewSize(1200, 800)},
		{"saved on a larger screen", fyne.NewSize(3800, 2100), fyne.NewSize(1366, 768), fyne.NewSize(1366-screenMargin, 768-screenMargin)},
		{"absurd, screen not known", fyne.NewSize(1e9, 1e9), fyne.Size{}, largestWindow},
		{"too small", fyne.NewSize(100, 50), fyne.NewSize(1920, 1080), smallestWindow},
		{"screen smaller than the smallest window", fyne.NewSize(1200, 800), fyne.NewSize(640, 480), smallestWindow},
		{"not a size", fyne.NewSize(float32(math.NaN()), 700), fyne.NewSize(1920, 1080), defaultWindow},
		{"negative", fyne.NewSize(-5, 700), fyne.NewSize(1920, 1080), defaultWindow},
	} {
		got := windowSize(ui.Settings{WindowWidth: c.saved.Width, WindowHeight: c.saved.Height}, c.screen)
		if got != c.want {
			t.Errorf("%s: saved %v, screen %v: %v, want %v", c.name, c.saved, c.screen, got, c.want)
		}
	}

	// Nothing that is not a size is saved; the rest of the settings stay.
	s.DeviceName = "Desk"
	if err := again.save(s); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []fyne.Size{{}, fyne.NewSize(float32(math.NaN()), 5), fyne.NewSize(1e9, 700)} {
		if err := saveWindowSize(again, bad); err != nil {
			t.Fatal(err)
		}
	}
	if s := again.get(); s.WindowWidth != 1200 || s.WindowHeight != 800 || s.DeviceName != "Desk" {
		t.Errorf("after sizes that are not: %+v", s)
	}
}
