package uitree

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestWalkFindsWhatWidgetsDraw: a label inside a card inside a container is
// found, and everything is visited once, the container first.
func TestWalkFindsWhatWidgetsDraw(t *testing.T) {
	test.NewTempApp(t)
	label := widget.NewLabel("inside")
	card := widget.NewCard("title", "", label)
	top := container.NewVBox(widget.NewButton("b", nil), card)
	seen := map[fyne.CanvasObject]int{}
	var order []fyne.CanvasObject
	Walk(top, func(o fyne.CanvasObject) {
		seen[o]++
		order = append(order, o)
	})
	if order[0] != top {
		t.Errorf("first visited %T, want the container", order[0])
	}
	if seen[label] != 1 || seen[card] != 1 {
		t.Errorf("label seen %d times, card %d, want 1 each", seen[label], seen[card])
	}
	for o, n := range seen {
		if n != 1 {
			t.Errorf("%T visited %d times", o, n)
		}
	}
}
