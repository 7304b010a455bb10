// Package uitree walks what a Fyne canvas object draws, for tests that look
// for a widget on screen (ui's and app's). Only tests import it: it renders
// widgets with fyne's test driver.
package uitree

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// Walk calls f on o and on everything drawn inside it, depth first: a
// container's objects and the objects of a widget's renderer.
func Walk(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	switch x := o.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			Walk(c, f)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(x).Objects() {
			Walk(c, f)
		}
	}
}
