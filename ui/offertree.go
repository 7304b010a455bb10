package ui

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// offerTreeView is an offer's files grouped by top-level folder: each
// folder with its file count and size (the offer's own summary, so a folder
// of 100,000 files is one line), the files the offer lists under it, and
// the loose files. It scrolls; it is as tall as its rows up to a bound.
type offerTreeView struct {
	o    *Offer
	tree *widget.Tree
	obj  fyne.CanvasObject
	// children of each node: "" is the root; "d<i>" folder i of o.Folders;
	// "f<i>" file i of o.Files; "m" and "m<i>" say how many more files
	// there are than listed (at the top, in folder i); "l" sums up the
	// folders past those listed (Offer.FoldersLeft).
	children map[string][]string
	// spacer holds the tree's height: the rows shown now (open folders
	// included), up to maxTreeRows; rowH is one row's.
	spacer *canvas.Rectangle
	rowH   float32
	// OnResize, when set, is called after a folder opened or closed
	// changed the tree's height (the prompt lays itself out again).
	OnResize func()
}

// maxTreeRows is how many rows the tree shows before it scrolls.
const maxTreeRows = 8

// openTreeFiles: offers listing at most this many files show every folder open.
const openTreeFiles = 12

func offerTree(o *Offer) *offerTreeView {
	v := &offerTreeView{o: o, children: map[string][]string{}}
	folder := map[string]string{} // top-level folder name -> its node
	for i, f := range o.Folders {
		id := "d" + strconv.Itoa(i)
		folder[f.Path] = id
		v.children[""] = append(v.children[""], id)
	}
	listed := map[string]int{}
	loose := 0
	for i, f := range o.Files {
		id := "f" + strconv.Itoa(i)
		top, _, nested := strings.Cut(f.Path, "/")
		if d, ok := folder[top]; nested && ok {
			v.children[d] = append(v.children[d], id)
			listed[d]++
			continue
		}
		if nested && o.FoldersLeft.Folders > 0 {
			continue // in a folder past those listed: the "l" row counts it
		}
		v.children[""] = append(v.children[""], id)
		loose++
	}
	inFolders := 0
	for i, f := range o.Folders {
		id := "d" + strconv.Itoa(i)
		inFolders += f.Files
		if f.Files > listed[id] {
			v.children[id] = append(v.children[id], "m"+strconv.Itoa(i))
		}
	}
	if o.FoldersLeft.Folders > 0 {
		v.children[""] = append(v.children[""], "l")
	}
	if o.FileCount()-inFolders-o.FoldersLeft.Files > loose {
		v.children[""] = append(v.children[""], "m")
	}
	v.tree = widget.NewTree(
		func(id widget.TreeNodeID) []widget.TreeNodeID { return v.children[id] },
		func(id widget.TreeNodeID) bool { return id == "" || strings.HasPrefix(id, "d") },
		func(bool) fyne.CanvasObject {
			name := newNameLabel() // a long name keeps its end: its extension
			size := widget.NewLabel("")
			return container.NewBorder(nil, nil, widget.NewIcon(theme.FileIcon()), size, name)
		},
		v.update,
	)
	if len(o.Files) <= openTreeFiles {
		v.tree.OpenAllBranches()
	}
	v.rowH = v.tree.CreateNode(false).MinSize().Height + theme.Padding()
	v.spacer = canvas.NewRectangle(color.Transparent)
	v.fit()
	// An opened folder makes the tree taller (up to maxTreeRows), not a
	// one-row scroller (issue 26, finding 11).
	v.tree.OnBranchOpened = func(widget.TreeNodeID) { v.resized() }
	v.tree.OnBranchClosed = func(widget.TreeNodeID) { v.resized() }
	v.obj = container.NewStack(v.spacer, v.tree)
	return v
}

// rows is how many rows the tree shows now: the top level and the
// contents of every open folder.
func (v *offerTreeView) rows() int {
	n := len(v.children[""])
	for _, c := range v.children[""] {
		if v.tree.IsBranchOpen(c) {
			n += len(v.children[c])
		}
	}
	return n
}

// fit sets the tree's height to the rows it shows, up to maxTreeRows.
func (v *offerTreeView) fit() {
	v.spacer.SetMinSize(fyne.NewSize(0, float32(min(v.rows(), maxTreeRows))*v.rowH))
}

func (v *offerTreeView) resized() {
	v.fit()
	if v.obj != nil {
		v.obj.Refresh()
	}
	if v.OnResize != nil {
		v.OnResize()
	}
}

func (v *offerTreeView) update(id widget.TreeNodeID, _ bool, obj fyne.CanvasObject) {
	c := obj.(*fyne.Container)
	name := c.Objects[0].(*nameLabel)
	icon := c.Objects[1].(*widget.Icon)
	size := c.Objects[2].(*widget.Label)
	name.Importance, size.Importance = widget.MediumImportance, widget.MediumImportance
	name.TextStyle.Italic = false
	n, _ := strconv.Atoi(strings.TrimLeft(id, "dfm"))
	switch {
	case strings.HasPrefix(id, "d"):
		f := v.o.Folders[n]
		icon.SetResource(theme.FolderIcon())
		name.SetFull(fmt.Sprintf("%s — %s", EscapeName(f.Path), plural(f.Files, "file")))
		size.SetText(HumanBytes(f.Bytes))
	case strings.HasPrefix(id, "f"):
		f := v.o.Files[n]
		icon.SetResource(theme.FileIcon())
		shown := f.Path
		if top, rest, nested := strings.Cut(f.Path, "/"); nested && v.inFolder(top) {
			shown = rest // the folder above says where it is
		}
		name.SetFull(EscapeName(shown))
		size.SetText(HumanBytes(f.Size))
		if f.Refused != "" {
			name.SetFull(EscapeName(shown) + ": " + f.Refused)
			name.Importance, size.Importance = widget.DangerImportance, widget.DangerImportance
			icon.SetResource(theme.ErrorIcon())
		}
	case id == "l":
		left := v.o.FoldersLeft
		icon.SetResource(theme.FolderIcon())
		name.SetFull(fmt.Sprintf("and %s more — %s", plural(left.Folders, "folder"), plural(left.Files, "file")))
		name.TextStyle.Italic = true
		size.SetText(HumanBytes(left.Bytes))
	default:
		icon.SetResource(theme.MoreHorizontalIcon())
		more := v.o.FileCount() - v.o.FoldersLeft.Files
		if id != "m" {
			more = v.o.Folders[n].Files - v.listedIn("d"+strconv.Itoa(n))
		} else {
			for _, f := range v.o.Folders {
				more -= f.Files
			}
			more -= v.listedIn("")
		}
		what := "files"
		if more == 1 {
			what = "file"
		}
		name.SetFull(fmt.Sprintf("and %s more %s", HumanCount(more), what))
		name.TextStyle.Italic = true
		size.SetText("")
	}
	name.Refresh()
	size.Refresh()
}

// inFolder reports whether top is one of the offer's folders.
func (v *offerTreeView) inFolder(top string) bool {
	for _, f := range v.o.Folders {
		if f.Path == top {
			return true
		}
	}
	return false
}

// listedIn counts the files listed under node id.
func (v *offerTreeView) listedIn(id string) int {
	n := 0
	for _, c := range v.children[id] {
		if strings.HasPrefix(c, "f") {
			n++
		}
	}
	return n
}
