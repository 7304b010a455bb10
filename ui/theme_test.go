package ui

import (
	"image/color"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/uitree"
	"github.com/ferrydrop/ferry/ui/transfer"
)

func TestContrastRatio(t *testing.T) {
	black, white := color.NRGBA{A: 0xff}, color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	if r := contrast(black, white); r < 20.99 || r > 21.01 {
		t.Errorf("black on white = %.2f, want 21", r)
	}
	if r := contrast(white, white); r != 1 {
		t.Errorf("white on white = %.2f, want 1", r)
	}
	// Fyne's own light success colour on white, the colour of finding 8.
	if r := contrast(color.NRGBA{R: 0x43, G: 0xf4, B: 0x36, A: 0xff}, white); r > 1.6 {
		t.Errorf("Fyne's light green on white = %.2f, want about 1.5", r)
	}
}

// Issue 26, finding 8: every colour a transfer's state is drawn in passes
// WCAG AA (4.5:1) on the backgrounds rows and dialogs use, light and dark.
func TestStateColoursContrast(t *testing.T) {
	names := map[widget.Importance]fyne.ThemeColorName{
		widget.MediumImportance:  theme.ColorNameForeground,
		widget.SuccessImportance: theme.ColorNameSuccess,
		widget.WarningImportance: theme.ColorNameWarning,
		widget.DangerImportance:  theme.ColorNameError,
	}
	// Every importance a delivery's phase can have.
	used := map[widget.Importance]bool{}
	for _, p := range []transfer.Phase{transfer.Offered, transfer.Waiting, transfer.Connecting, transfer.Sending,
		transfer.Paused, transfer.Reconnecting, transfer.Moved, transfer.Resumed, transfer.Interrupted, transfer.Done,
		transfer.Failed, transfer.Cancelled, transfer.Declined, transfer.Expired} {
		for _, dir := range []transfer.Direction{transfer.Outgoing, transfer.Incoming} {
			for _, by := range []transfer.Actor{transfer.Nobody, transfer.You, transfer.Peer} {
				used[phaseImportance(&transfer.Delivery{Phase: p, Direction: dir, By: by})] = true
			}
		}
	}
	th := Theme()
	for imp := range used {
		name, ok := names[imp]
		if !ok {
			t.Errorf("a state is drawn with importance %v, which has no colour checked here (low is the disabled colour)", imp)
			continue
		}
		for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
			for _, bg := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameInputBackground, theme.ColorNameOverlayBackground} {
				if r := contrast(th.Color(name, v), th.Color(bg, v)); r < 4.5 {
					t.Errorf("%s on %s (variant %d): contrast %.2f, want at least 4.5", name, bg, v, r)
				}
			}
		}
	}
}

// TestInputBorderContrast: the outline of a check box and of a text field
// stands out 3:1 (WCAG 1.4.11, non-text contrast) from the backgrounds they
// sit on, light and dark. Fyne's input border was 1.16:1 (light) and 1.41:1
// (dark) on a device row (filled with the input background): the rows'
// check boxes, which pick the devices a send goes to, were all but
// invisible (seen under Xvfb; e2e-light.png).
func TestInputBorderContrast(t *testing.T) {
	th := Theme()
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		for _, bg := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameInputBackground, theme.ColorNameOverlayBackground} {
			if r := contrast(th.Color(theme.ColorNameInputBorder, v), th.Color(bg, v)); r < 3 {
				t.Errorf("input border on %s (variant %d): contrast %.2f, want at least 3", bg, v, r)
			}
		}
	}
}

// variantTheme is Ferry's theme held to one variant, as the desktop would
// choose it.
type variantTheme struct {
	fyne.Theme
	v fyne.ThemeVariant
}

func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.v)
}

// Issue 26, finding 8: the portal turns Fyne light after the window was
// built; an online device's row then takes the light colours at once, not
// the dark ones it was built with (drawn black, as if disabled).
func TestDeviceRowFollowsThemeChange(t *testing.T) {
	u, _, _ := newTestUI(t)
	fyne.CurrentApp().Settings().SetTheme(variantTheme{Theme(), theme.VariantDark})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "Alice", Online: true, Source: "mdns",
		Addrs: []addr.Addr{addr.New(addr.QUIC, "10.0.0.2:47800")}}})
	if len(u.devices.rows) != 1 {
		t.Fatalf("rows = %d", len(u.devices.rows))
	}
	bg := u.devices.rows[0].bg
	fill := func() color.Color {
		return test.TempWidgetRenderer(t, bg).Objects()[0].(*canvas.Rectangle).FillColor
	}
	dark := Theme().Color(theme.ColorNameInputBackground, theme.VariantDark)
	if got := fill(); got != dark {
		t.Fatalf("dark: fill %v, want %v", got, dark)
	}
	fyne.CurrentApp().Settings().SetTheme(variantTheme{Theme(), theme.VariantLight})
	light := Theme().Color(theme.ColorNameInputBackground, theme.VariantLight)
	if got := fill(); got != light {
		t.Errorf("after the switch to light: fill %v, want %v", got, light)
	}
}

// Issue 26, finding 8: no text on the main window, the Devices page or an
// offer's prompt is drawn in the "low" colour, which is the disabled one
// (about 1.3:1 on white, 1.5:1 on the dark background).
func TestNoTextInTheDisabledColour(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyTransfer(offerEvent("r1", 20))
	u.known.reload()
	for name, root := range map[string]fyne.CanvasObject{
		"window": u.win.Content(), "devices page": u.known.obj, "prompt": u.win.Canvas().Overlays().Top(),
	} {
		uitree.Walk(root, func(x fyne.CanvasObject) {
			if l, ok := x.(*widget.Label); ok && l.Visible() && l.Text != "" && l.Importance == widget.LowImportance {
				t.Errorf("%s: %q is drawn in the disabled colour", name, l.Text)
			}
		})
	}
}
