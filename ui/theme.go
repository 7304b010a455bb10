package ui

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// Theme is Ferry's theme: Fyne's own, light or dark as the desktop says,
// with state colours (done, waiting on someone, failed) that every reader
// can read: each passes WCAG AA (4.5:1) on the backgrounds it is drawn on,
// in both variants (TestStateColoursContrast). Fyne's light success and
// warning colours are bright green and orange on white, about 1.5:1 and
// 2:1 (issue 26, finding 8). The outline of a check box and a text field
// (Fyne's input border) stands out 3:1 (WCAG's non-text contrast) from
// what it is drawn on (TestInputBorderContrast): Fyne's, 1.16:1 (light) and
// 1.41:1 (dark) on a device row, left the rows' check boxes ("check
// several to send to all") all but invisible.
func Theme() fyne.Theme { return ferryTheme{theme.DefaultTheme()} }

type ferryTheme struct{ fyne.Theme }

// stateColours replace Fyne's where they fail AA (the input border: 3:1);
// the others are Fyne's.
var stateColours = map[fyne.ThemeVariant]map[fyne.ThemeColorName]color.Color{
	theme.VariantLight: {
		theme.ColorNameSuccess:     color.NRGBA{R: 0x1b, G: 0x7d, B: 0x2b, A: 0xff},
		theme.ColorNameWarning:     color.NRGBA{R: 0xa6, G: 0x52, B: 0x00, A: 0xff},
		theme.ColorNameError:       color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff},
		theme.ColorNameInputBorder: color.NRGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xff},
	},
	theme.VariantDark: {
		theme.ColorNameError:       color.NRGBA{R: 0xff, G: 0x6b, B: 0x5e, A: 0xff},
		theme.ColorNameInputBorder: color.NRGBA{R: 0x70, G: 0x70, B: 0x73, A: 0xff},
	},
}

func (t ferryTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if c, ok := stateColours[v][n]; ok {
		return c
	}
	return t.Theme.Color(n, v)
}

// contrast is the WCAG 2 contrast ratio of two opaque colours (1 to 21).
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// luminance is WCAG 2's relative luminance of an opaque colour.
func luminance(c color.Color) float64 {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(n.R) + 0.7152*lin(n.G) + 0.0722*lin(n.B)
}
