package app

import (
	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui"
)

// Bounds of the main window's size, in Fyne's units.
var (
	// defaultWindow is its size at the first start.
	defaultWindow = fyne.NewSize(980, 640)
	// smallestWindow is the size below which the window is not restored.
	// The UI's own smallest is below it (578 × 351 with the dark theme at
	// scale 1, 578 × 393 with a transfer listed, code strip or not: xprop
	// WM_NORMAL_HINTS on the running app), and Fyne keeps that anyway.
	smallestWindow = fyne.NewSize(670, 469)
	// largestWindow bounds a saved size where the screen's is not known.
	largestWindow = fyne.NewSize(7680, 4320)
)

// screenMargin is what a restored window leaves of the screen around it
// (panels, title bar): a saved size as large as the screen, or larger
// (saved on a larger screen), would put the window's edges and its title
// bar out of reach.
const screenMargin = 48

// windowSize is the main window's size at start: the one saved when it
// was last closed, within the screen (zero: not known) less screenMargin,
// and not below smallestWindow; the default when none was saved or the
// saved one is not a size (negative, NaN).
func windowSize(s ui.Settings, screen fyne.Size) fyne.Size {
	w, h := s.WindowWidth, s.WindowHeight
	if !(w > 0 && h > 0) {
		return defaultWindow
	}
	most := largestWindow
	if screen.Width > 0 && screen.Height > 0 {
		most = fyne.NewSize(max(screen.Width-screenMargin, smallestWindow.Width), max(screen.Height-screenMargin, smallestWindow.Height))
	}
	return fyne.NewSize(min(max(w, smallestWindow.Width), most.Width), min(max(h, smallestWindow.Height), most.Height))
}

// saveWindowSize keeps size in the settings for the next start, when it is
// a size and another than the one kept. It writes the settings file only:
// nothing else of the settings changes.
func saveWindowSize(st *settingsStore, size fyne.Size) error {
	if !(size.Width > 0 && size.Height > 0) || size.Width > largestWindow.Width || size.Height > largestWindow.Height {
		return nil
	}
	s := st.get()
	if s.WindowWidth == size.Width && s.WindowHeight == size.Height {
		return nil
	}
	s.WindowWidth, s.WindowHeight = size.Width, size.Height
	return st.save(s)
}
