package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Described is what the window shows, in words and where: the rows of
// transfers, devices and (on Settings' Devices page) known devices, with
// the centre of each visible button in window pixels. It is for the GUI
// end-to-end test only, which reads the words a person reads and clicks
// where a person clicks (app/smoke.go writes it to a file when
// FERRY_SMOKE_DESCRIBE is set).
type Described struct {
	Tab         string         `json:"tab"`          // "Nearby", "History", "Settings"
	SettingsTab string         `json:"settings_tab"` // "General", "Devices"
	Transfers   []DescribedRow `json:"transfers"`    // newest first
	Devices     []DescribedRow `json:"devices"`      // in display order
	Known       []DescribedRow `json:"known"`        // Settings' Devices page
	Scale       float32        `json:"scale"`        // window pixels per Fyne unit
	Size        [2]int         `json:"size"`         // the window's content, in pixels
	Dialogs     int            `json:"dialogs"`      // dialogs shown (Ferry's own modals)
}

// DescribedRow is one row: its title, the line under it, its state (a
// transfer's words, a known device's pairing), a transfer's code strip and its
// visible buttons.
type DescribedRow struct {
	Title   string            `json:"title"`
	Sub     string            `json:"sub,omitempty"`
	State   string            `json:"state,omitempty"`
	Bar     float64           `json:"bar,omitempty"`  // a transfer's progress, 0-1
	Pair    string            `json:"pair,omitempty"` // a transfer's code strip when shown: the code, then its line
	Buttons map[string][2]int `json:"buttons,omitempty"`
}

// Describe reports what the window shows now. Call it on the Fyne goroutine.
func (u *UI) Describe() Described {
	c := u.win.Canvas()
	d := Described{Scale: c.Scale(), Dialogs: len(u.modals)}
	sz := c.Size()
	d.Size = [2]int{int(sz.Width * d.Scale), int(sz.Height * d.Scale)}
	if t := u.tabs.Selected(); t != nil {
		d.Tab = t.Text
	}
	if u.settings != nil && u.settings.tabs != nil {
		if t := u.settings.tabs.Selected(); t != nil {
			d.SettingsTab = t.Text
		}
	}
	buttons := func(bs ...*button) map[string][2]int {
		m := map[string][2]int{}
		for _, b := range bs {
			if b == nil || !b.Visible() || b.Disabled() {
				continue
			}
			if at := u.centre(b); at[0] > int(b.Size().Width*d.Scale)/2 || at[1] > int(b.Size().Height*d.Scale)/2 {
				m[b.Text] = at // laid out (a button just shown sits at 0,0 until then)
			}
		}
		return m
	}
	for _, id := range u.transfers.order {
		v := u.transfers.byID[id]
		if v == nil || v.title == nil {
			continue
		}
		row := DescribedRow{Title: v.title.full, Sub: v.sub.Text, State: v.stateLbl.Text, Bar: v.bar.Value,
			Buttons: buttons(v.details, v.copyText, v.openLink, v.open, v.show, v.pause, v.resume, v.retry, v.discard, v.cancel)}
		if v.pair.obj.Visible() {
			row.Pair = v.pair.code.Text + " " + v.pair.line.Text
		}
		d.Transfers = append(d.Transfers, row)
	}
	for _, r := range u.devices.rows {
		row := DescribedRow{Title: displayName(r.dev), Buttons: buttons(r.send)}
		if r.tag != nil {
			row.Title += " " + r.tag.Text
		}
		if r.info != nil {
			row.Sub = r.info.Text
		}
		d.Devices = append(d.Devices, row)
	}
	if u.known != nil {
		for _, r := range u.known.rows {
			d.Known = append(d.Known, DescribedRow{Title: r.d.Name, State: labelText(r.paired), Buttons: buttons(r.pair, r.rename, r.forget)})
		}
	}
	return d
}

// centre is the middle of o in window pixels.
func (u *UI) centre(o fyne.CanvasObject) [2]int {
	s := u.win.Canvas().Scale()
	p := fyne.CurrentApp().Driver().AbsolutePositionForObject(o)
	z := o.Size()
	return [2]int{int((p.X + z.Width/2) * s), int((p.Y + z.Height/2) * s)}
}

func labelText(l *widget.Label) string {
	if l == nil {
		return ""
	}
	return l.Text
}
