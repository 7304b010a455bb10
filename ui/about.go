package ui

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/notices"
)

// licenceLine is the About part of Settings: Ferry's licence and a button
// that shows the third-party software it contains.
func (u *UI) licenceLine() fyne.CanvasObject {
	return container.NewHBox(
		widget.NewLabel("Apache License 2.0"),
		u.newButton("Third-party licences…", theme.InfoIcon(), u.showLicences),
	)
}

// licencesText is what the licences dialog shows: the modules linked into
// this binary and the licence texts installed with it (found next to exe).
func licencesText(exe string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Ferry is free software under the Apache License 2.0 (%s).\n", notices.License)
	b.WriteString("It contains the software below, each under its own licence.\n\n")
	for _, m := range notices.Modules() {
		fmt.Fprintf(&b, "  %s %s\n", m.Path, m.Version)
	}
	path, text, err := notices.ThirdPartyTexts(exe)
	switch {
	case err == nil:
		fmt.Fprintf(&b, "\nThe licence texts, from %s:\n\n%s", path, text)
	case errors.Is(err, notices.ErrNoTexts):
		b.WriteString("\nThis build came without the licence texts (THIRD_PARTY_LICENSES): the\n" +
			"release packages install them; `go run ./packaging/tool licenses FILE` writes them.\n")
	default:
		fmt.Fprintf(&b, "\nThe licence texts could not be read: %v\n", err)
	}
	return b.String()
}

// showLicences shows licencesText in a scrolling dialog.
func (u *UI) showLicences() {
	exe, _ := os.Executable()
	grid := widget.NewTextGridFromString(licencesText(exe))
	scroll := container.NewScroll(grid)
	scroll.SetMinSize(fyne.NewSize(560, 360))
	var d *dialog.CustomDialog
	closeBtn := u.newButton("Close", nil, func() { d.Hide() })
	closeBtn.Importance = widget.HighImportance
	d = dialog.NewCustomWithoutButtons("Licences", scroll, u.win)
	d.SetButtons([]fyne.CanvasObject{closeBtn})
	u.showModal(d, &modal{dismiss: d.Hide, confirm: d.Hide, scroll: scroll}, closeBtn)
}
