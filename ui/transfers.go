package ui

import (
	"fmt"
	"image"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/numtext"
	"github.com/ferrydrop/ferry/internal/safetext"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// transferView is what the UI shows of one transfer: its delivery's state
// in the model (d), and what the engine's events say about its connection
// and files for Details, nothing more.
type transferView struct {
	d         *transfer.Delivery // the row's state, words and buttons
	final     bool               // d had finished when last counted (transferList.finished)
	id        string
	delivery  string // the delivery's ID, the same on both sides (TransferEvent.Delivery)
	dir       Direction
	peer      Peer
	state     State
	files     int
	total     int64
	progress  Progress
	transport string
	reason    string
	note      string    // why it is reconnecting, from the engine's state event
	away      bool      // reconnecting because the other device's Ferry was closed (CodeGoingAway)
	moved     time.Time // when the network path last changed under it (TransferPath)
	metrics   *Metrics
	// results are the first files that ended (at most maxBatchFiles);
	// ended, verified and failed count them all, saved the verified
	// received ones, image is the first verified picture among them: a
	// row of 10^5 files keeps no list that grows with them.
	results  []FileResult
	failures []FileResult // failed files past results (at most maxBatchFailures)
	ended    int
	verified int
	failed   int
	saved    int
	image    string
	result   *Result
	dest     string
	started  time.Time
	names    []string  // the first top-level files and folders offered
	items    int       // how many top-level items were offered
	text     string    // the offer's text item
	skipped  *Skipped  // sending: what the given folders hold that is not sent
	renamed  []Renamed // sending: given paths sent under another name
	// pairCode is the session's verification code with a device not
	// trusted yet; codeAnswered says the user compared it here (receiving:
	// in the prompt, before Always accept).
	pairCode     string
	codeShown    CodeShown // sending: whether the receiver showed pairCode
	codeAhead    int       // sending, queued: offers the receiver keeps before this one (PairCode.Ahead)
	codeAnswered bool
	codeMatched  bool
	// tried, sending: an attempt of the delivery ended or lost its link
	// (a result, a reconnect; a send kept from an earlier run of Ferry
	// comes back as a result). again: pairCode came after such an
	// attempt, in a session that goes on with it (a reconnect, Retry, the
	// rejoin, engine.Continue). A receiver that took the send then goes on
	// without asking, so its screen does not show this code, while it may
	// have shown an earlier session's: every session has a code of its own.
	tried, again bool
	// promptCode is, receiving, the code the offer's prompt showed this
	// device's user: the row keeps it for the sender's user to compare
	// once the prompt is gone. "" when the prompt showed none (a trusted
	// sender, accepted without asking) or a later session brought another.
	promptCode string

	thumbFor string // the file the thumbnail shows (asked once)
	laidOut  bool   // the row's foot was laid out once

	// widgets
	obj      fyne.CanvasObject
	title    *nameLabel
	sub      *widget.Label
	bar      *widget.ProgressBar
	stateLbl *widget.Label
	cancel   *button
	pause    *button
	resume   *button
	retry    *button
	discard  *button // receiving, interrupted: discard what it kept
	open     *button // "Open": the one file received
	show     *button // "Show in folder": the received files' folder
	copyText *button
	openLink *button
	details  *button
	what     *widget.Label // the text, for a text transfer
	notSent  *widget.Label // sending: what the given folders hold that is not sent
	thumb    *canvas.Image
	buttons  *fyne.Container
	foot     *fyne.Container
	pair     *pairStrip
}

// transferList renders transfers in both directions, newest first: one row
// per delivery, drawn from the model.
type transferList struct {
	u     *UI
	model *transfer.Model
	byID  map[string]*transferView
	order []string // newest first
	box   *fyne.Container
	// empty is the hint the list shows without rows: "No transfers yet"
	// until a row was shown, then that none is under way (the finished
	// ones were cleared, and are in History).
	empty  *widget.Label
	shown  bool // a row was shown
	scroll *container.Scroll
	// clear is Clear finished, which can be pressed only while a row has
	// finished (with none it did nothing); finished counts those rows.
	clear    *button
	finished int
	// detail is the open details dialog, refreshed live.
	detail       *dialog.CustomDialog
	detailID     string
	detailStatus *widget.Label
	detailLabel  *widget.Label
	detailFiles  *widget.Label
	detailMore   *widget.Label // the files past those listed, counted
	// detailSkipped lists what a send leaves out, under its heading
	// detailSkippedHead; both hidden when it leaves out nothing.
	detailSkippedHead *widget.Label
	detailSkipped     *widget.Label
	// detailRenamed lists the given paths a send carries under another
	// name, under detailRenamedHead; both hidden when there are none.
	detailRenamedHead *widget.Label
	detailRenamed     *widget.Label
}

// The empty list's hints: before any transfer, and once the finished ones
// were cleared (or dropped).
const (
	noTransfersYet      = "No transfers yet. Drop files on a device to send them."
	noTransfersUnderWay = "No transfers under way. Finished ones are in History; drop files on a device to send more."
)

func newTransferList(u *UI) *transferList {
	l := &transferList{u: u, model: transfer.New(), byID: make(map[string]*transferView)}
	hint := widget.NewLabel(noTransfersYet)
	hint.Wrapping = fyne.TextWrapWord
	hint.Alignment = fyne.TextAlignCenter
	hint.TextStyle.Italic = true // a hint, readable (the "low" colour is the disabled one)
	l.empty = hint
	l.box = container.NewVBox(l.empty)
	l.scroll = container.NewVScroll(l.box)
	return l
}

// DeliveryEvents are the model's inputs for one transfer event (none for
// what only Details shows: metrics, transport, codes). A transfer's ID is
// its delivery's on this side (the engine keeps it across reconnects,
// pauses and Retry, and gives every new send a new one), so the model is
// keyed by it.
func DeliveryEvents(ev TransferEvent) []transfer.Event {
	base := transfer.Event{Delivery: ev.ID, Direction: transfer.Direction(ev.Direction), Peer: modelPeer(ev.Peer), Time: ev.Time}
	one := func(k transfer.EventKind, f func(*transfer.Event)) []transfer.Event {
		e := base
		e.Kind = k
		if f != nil {
			f(&e)
		}
		return []transfer.Event{e}
	}
	switch ev.Kind {
	case TransferOffer:
		if ev.Offer == nil {
			return nil
		}
		o := ev.Offer
		out := one(transfer.EvOffer, func(e *transfer.Event) {
			e.Count, e.Text, e.Total = o.FileCount(), o.Text != "", o.Total
			for _, f := range o.Files {
				e.Files = append(e.Files, transfer.File{Path: f.Path, Size: f.Size, Refused: f.Refused})
			}
		})
		if ev.State != "" {
			out = append(out, one(transfer.EvState, func(e *transfer.Event) { e.State = string(ev.State) })...)
		}
		return out
	case TransferState:
		return one(transfer.EvState, func(e *transfer.Event) {
			e.State = string(ev.State)
			if r := ev.Result; r != nil && ev.State == StateRetrying {
				e.Err = r.Err // why the attempt failed: counted (Delivery.Tries)
			}
		})
	case TransferProgress:
		if ev.Progress == nil {
			return nil
		}
		return one(transfer.EvProgress, func(e *transfer.Event) {
			e.Bytes, e.Total, e.Count = ev.Progress.Bytes, ev.Progress.Total, ev.Progress.TotalFiles
		})
	case TransferFile:
		if f := ev.File; f != nil {
			return one(transfer.EvFile, func(e *transfer.Event) {
				e.File = &transfer.FileEnd{Path: f.Path, Size: f.Size, Verified: f.Verified, Err: f.Err}
			})
		}
	case TransferFiles:
		if b := ev.Files; b != nil {
			return one(transfer.EvFiles, func(e *transfer.Event) { e.Verified, e.Failed = b.Verified, b.Failed })
		}
	case TransferPath:
		return one(transfer.EvPath, nil)
	case TransferTransport:
		return one(transfer.EvTransport, func(e *transfer.Event) { e.Route, e.Relay = transfer.Route(ev.Route), ev.Relay })
	case TransferResult:
		if r := ev.Result; r != nil {
			return one(transfer.EvResult, func(e *transfer.Event) {
				e.State, e.Code, e.ByPeer, e.Err, e.Bytes = string(r.State), string(r.Code), r.ByPeer, r.Err, r.Bytes
				e.Verified, e.Text, e.Refused = r.Verified, r.Text != "", r.Refused
				e.Rejoin, e.NotStarted = r.Rejoin, r.NotStarted
			})
		}
	}
	return nil
}

// modelPeer names the other device for the model's words; "" when the
// event does not say (the model keeps the name it has).
func modelPeer(p Peer) string {
	if p.Name == "" && p.ID == "" {
		return ""
	}
	return peerWho(p)
}

// deviceRenamed shows a device's new name at once wherever it is shown:
// its row in Nearby and the rows of its transfers (issue 26, finding 6).
func (u *UI) deviceRenamed(id, name string) {
	if id == "" || name == "" {
		return
	}
	if d, ok := u.devices.devices[id]; ok {
		d.Name = name
		u.devices.devices[id] = d
		u.devices.render()
	}
	l := u.transfers
	for _, v := range l.byID {
		if v.peer.ID != id {
			continue
		}
		v.peer.Name = name
		l.setPeer(v)
		l.refresh(v)
	}
}

// setPeer names v's peer to the model as the row's title does, so that
// its words ("vm · 3NXD-BSTL declined") tell two devices of one name apart.
func (l *transferList) setPeer(v *transferView) {
	if v.peer.Name != "" || v.peer.ID != "" {
		l.model.SetPeer(v.id, l.u.sentenceWho(v.peer))
	}
}

// act feeds the user's action on a row to the model and redraws the row.
func (l *transferList) act(id string, k transfer.EventKind) {
	v := l.byID[id]
	if v == nil {
		return
	}
	l.model.Apply(transfer.Event{Kind: k, Delivery: id, Time: l.u.now()})
	l.refresh(v)
}

// apply merges one engine event into its transfer's row.
func (l *transferList) apply(ev TransferEvent) {
	v, ok := l.byID[ev.ID]
	if !ok {
		v = &transferView{id: ev.ID, dir: ev.Direction, peer: ev.Peer, state: StateConnecting, started: ev.Time}
		l.byID[ev.ID] = v
		l.order = append([]string{ev.ID}, l.order...)
		l.build(v)
		l.relayout()
	}
	for _, e := range DeliveryEvents(ev) {
		l.model.Apply(e)
	}
	if v.d = l.model.Get(ev.ID); v.d == nil {
		// Kinds the model does not take (metrics) before any other event.
		v.d = l.model.Apply(transfer.Event{Kind: transfer.EvState, Delivery: ev.ID,
			Direction: transfer.Direction(ev.Direction), Peer: modelPeer(ev.Peer), Time: ev.Time})
	}
	if ev.Peer.Name != "" || ev.Peer.ID != "" {
		v.peer = ev.Peer
	}
	if ev.Delivery != "" {
		v.delivery = ev.Delivery
	}
	l.setPeer(v) // each event names the peer to the model without its short ID
	// The model says whether an ended delivery goes on (Retry, Resume):
	// only then may the engine's state replace a final one.
	if ev.State != "" && !(v.state.Final() && !ev.State.Final() && v.d.Phase.Final()) {
		v.state = ev.State
		if v.result != nil && !v.result.State.Final() && ev.Kind != TransferResult && ev.State != v.result.State {
			// Paused or interrupted before; going again now (same transfer).
			v.result = nil
		}
	}
	switch {
	case v.state != StateRetrying:
		v.note, v.away = "", false
	case ev.Kind == TransferState && ev.Result != nil && ev.Result.Err != "":
		v.note, v.away = ev.Result.Err, ev.Result.Code == CodeGoingAway
	}
	code := v.pairCode
	if v.state == StateRetrying && !v.codeAnswered {
		// The code was that session's: the next one has a code of its own
		// (its TransferPair shows it), and this one cannot be answered.
		v.pairCode = ""
	}
	switch ev.Kind {
	case TransferOffer:
		if o := ev.Offer; o != nil {
			v.files, v.total, v.dest = o.FileCount(), o.Total, o.Dest
			v.names, v.items = OfferNames(o)
			v.text = o.Text
			if o.Skipped != nil && v.dir == Outgoing {
				v.skipped = o.Skipped
			}
			if o.Renamed != nil && v.dir == Outgoing {
				v.renamed = o.Renamed
			}
			if o.PairCode != "" {
				v.pairCode, v.codeShown, v.codeAhead = o.PairCode, CodeShownPending, 0
				if v.dir == Incoming {
					v.promptCode = o.PairCode
				}
			}
		}
	case TransferPair:
		if ev.Pair != nil {
			v.pairCode, v.codeShown, v.codeAhead = ev.Pair.Code, ev.Pair.Shown, ev.Pair.Ahead
			if ev.Pair.Code != v.promptCode {
				v.promptCode = "" // a new session's, which no prompt here showed
			}
		}
	case TransferProgress:
		if p := ev.Progress; p != nil {
			v.progress = *p
			if p.TotalFiles > 0 {
				v.files = p.TotalFiles
			}
			if p.Total > 0 {
				v.total = p.Total
			}
		}
	case TransferFile:
		if ev.File != nil {
			var b FileBatch
			b.add(*ev.File)
			v.addFiles(&b)
		}
	case TransferFiles:
		if ev.Files != nil {
			v.addFiles(ev.Files)
		}
	case TransferMetrics:
		v.metrics = ev.Metrics
		if v.transport == "" && ev.Metrics != nil {
			v.transport = ev.Metrics.Transport
		}
	case TransferTransport:
		v.transport, v.reason = ev.Transport, ev.Reason
	case TransferPath:
		v.moved = l.u.now()
		if ev.Path != nil && ev.Path.Moved == "peer" {
			v.peer.Addr = ev.Path.To
		}
	case TransferResult:
		if r := ev.Result; r != nil && !(v.state.Final() && !r.State.Final() && v.d.Phase.Final()) {
			v.result = r
			v.state = r.State
			if r.Transport != "" {
				v.transport = r.Transport
			}
			if r.TransportReason != "" && v.reason == "" {
				v.reason = r.TransportReason
			}
			if r.Metrics != nil {
				v.metrics = finalMetrics(v.metrics, r.Metrics)
			}
			if r.Destination != "" {
				v.dest = r.Destination
			}
			if r.Text != "" {
				v.text = r.Text
			}
			if r.Files > 0 {
				v.files = r.Files
			}
			if v.total == 0 && r.State == StateDone {
				v.total = r.Bytes
			}
			if r.State == StateDone && v.total > 0 {
				v.progress.Bytes = v.total
			}
		}
	}
	if v.pairCode != "" && v.pairCode != code {
		v.again = v.tried
	}
	v.tried = v.tried || ev.Kind == TransferResult || v.state == StateRetrying
	l.refresh(v)
	if l.detail != nil && l.detailID == v.id {
		l.fillDetails(v)
	}
}

// addFiles counts the files of b in and keeps the first of them.
func (v *transferView) addFiles(b *FileBatch) {
	v.ended += b.Ended
	v.verified += b.Verified
	v.failed += b.Failed
	if v.dir == Incoming {
		v.saved += b.Verified
	}
	if v.image == "" && b.Image != nil {
		v.image = savedAs(*b.Image)
	}
	n := min(max(maxBatchFiles-len(v.results), 0), len(b.First))
	v.results = append(v.results, b.First[:n]...)
	// Failed files past the first are named too (bounded): which file of
	// a tree of 10^5 did not arrive is what Details is opened for.
	for _, f := range append(b.First[n:len(b.First):len(b.First)], b.Failures...) {
		if f.Err != "" && !f.Verified && len(v.failures) < maxBatchFailures {
			v.failures = append(v.failures, f)
		}
	}
}

// savedAs is a received file's name as saved, relative to the destination.
func savedAs(f FileResult) string {
	if f.SavedAs != "" {
		return f.SavedAs
	}
	return f.Path
}

// running lists the deliveries under way (quitting would stop them),
// newest first.
func (l *transferList) running() []*transfer.Delivery {
	var out []*transfer.Delivery
	for _, id := range l.order {
		if v := l.byID[id]; v.d != nil && v.d.Phase.Running() {
			out = append(out, v.d)
		}
	}
	return out
}

func (l *transferList) relayout() {
	objs := make([]fyne.CanvasObject, 0, len(l.order))
	l.finished = 0
	for _, id := range l.order {
		v := l.byID[id]
		objs = append(objs, v.obj)
		if v.final = v.d != nil && v.d.Over(); v.final {
			l.finished++
		}
	}
	l.showClear()
	if len(objs) > 0 {
		l.shown = true
	} else {
		if l.shown {
			l.empty.SetText(noTransfersUnderWay)
		}
		objs = append(objs, l.empty)
	}
	l.box.Objects = objs
	l.box.Refresh()
}

// showClear lets Clear finished be pressed while a row has finished.
func (l *transferList) showClear() {
	switch {
	case l.clear == nil:
	case l.finished > 0 && l.clear.Disabled():
		l.clear.Enable()
	case l.finished == 0 && !l.clear.Disabled():
		l.clear.Disable()
	}
}

// drop removes one transfer's row (it stays in History).
func (l *transferList) drop(id string) {
	if _, ok := l.byID[id]; !ok {
		return
	}
	delete(l.byID, id)
	l.order = slices.DeleteFunc(l.order, func(o string) bool { return o == id })
	l.relayout()
}

// clearFinished drops finished transfers from the list (they stay in
// History); a send that waits for its device to go on is not finished: it
// keeps its row, and its Cancel.
func (l *transferList) clearFinished() {
	keep := l.order[:0]
	for _, id := range l.order {
		if l.byID[id].d.Over() {
			delete(l.byID, id)
			continue
		}
		keep = append(keep, id)
	}
	l.order = keep
	l.relayout()
}

func (l *transferList) build(v *transferView) {
	// A long title leaves out its middle: its end says which files, and
	// how many more ("… appendices 02.pdf and 58 more").
	v.title = newNameLabel()
	v.title.TextStyle = fyne.TextStyle{Bold: true}
	v.sub = widget.NewLabel("")
	v.sub.SizeName = theme.SizeNameCaptionText
	v.sub.Truncation = fyne.TextTruncateEllipsis
	v.bar = widget.NewProgressBar()
	v.stateLbl = widget.NewLabel("")
	v.stateLbl.Wrapping = fyne.TextWrapWord // a long state wraps; it never stretches the buttons
	id := v.id
	u := l.u
	v.cancel = u.newButton(string(transfer.ActionCancel), theme.CancelIcon(), func() {
		if u.cancel(id) {
			l.act(id, transfer.ActCancel)
		}
	})
	v.pause = u.newButton(string(transfer.ActionPause), theme.MediaPauseIcon(), func() {
		if u.pause(id) {
			l.act(id, transfer.ActPause)
		}
	})
	v.resume = u.newButton(string(transfer.ActionResume), theme.MediaPlayIcon(), func() {
		if u.resume(id) {
			l.act(id, transfer.ActResume)
		}
	})
	v.retry = u.newButton(string(transfer.ActionRetry), theme.MediaReplayIcon(), func() { l.retry(id) })
	v.discard = u.newButton(string(transfer.ActionDiscard), theme.DeleteIcon(), func() { l.discard(id) })
	v.open = u.newButton("Open", theme.FileIcon(), func() {
		if p := firstSaved(l.byID[id]); p != "" {
			u.openFile(p)
		}
	})
	v.show = u.newButton("Show in folder", theme.FolderOpenIcon(), func() { u.showReceived(l.byID[id]) })
	v.copyText = u.newButton("Copy", theme.ContentCopyIcon(), func() { u.copyText(l.byID[id].text) })
	v.openLink = u.newButton("Open link", theme.ComputerIcon(), func() {
		if link := TextLink(l.byID[id].text); link != nil {
			u.openLink(link)
		}
	})
	v.details = u.newButton("Details", theme.InfoIcon(), func() { l.showDetails(id) })
	icon := theme.UploadIcon()
	if v.dir == Incoming {
		icon = theme.DownloadIcon()
	}
	v.what = widget.NewLabel("")
	v.what.Truncation = fyne.TextTruncateEllipsis
	v.what.Hide()
	v.notSent = widget.NewLabel("")
	v.notSent.SizeName = theme.SizeNameCaptionText
	v.notSent.Wrapping = fyne.TextWrapWord
	v.notSent.Hide()
	v.thumb = canvas.NewImageFromResource(nil)
	v.thumb.FillMode = canvas.ImageFillContain
	v.thumb.SetMinSize(fyne.NewSize(thumbSize, thumbSize))
	v.thumb.Hide()
	v.buttons = container.NewHBox(v.details, v.copyText, v.openLink, v.open, v.show, v.pause, v.resume, v.retry, v.discard, v.cancel)
	head := container.NewBorder(nil, nil, widget.NewIcon(icon), v.thumb, v.title)
	v.foot = container.New(&footLayout{}, v.stateLbl, v.buttons)
	v.pair = l.newPairStrip(v)
	v.obj = container.NewVBox(head, v.what, v.bar, v.sub, v.notSent, v.pair.obj, v.foot, widget.NewSeparator())
}

// thumbSize is the side of a received picture's thumbnail.
const thumbSize = 40

// firstSaved is the first received file as saved, absolute; "" when none
// arrived (or v is no receiving row).
func firstSaved(v *transferView) string {
	if v == nil || v.dir != Incoming || v.dest == "" || v.saved == 0 {
		return ""
	}
	for _, f := range v.results {
		if f.Verified {
			return filepath.Join(v.dest, filepath.FromSlash(savedAs(f)))
		}
	}
	return ""
}

// showReceived opens the received files' folder, the first file selected;
// of several files, the item in the destination that holds it (a folder
// received shows selected in Downloads, not its first file's folder deep
// inside it).
func (u *UI) showReceived(v *transferView) {
	if p := firstSaved(v); p != "" {
		if v.saved > 1 {
			p = topItem(v.dest, p)
		}
		u.showInFolder(p)
		return
	}
	u.openFolder(v)
}

// topItem is the file or folder directly in dest that holds p ("Photos"
// for dest/Photos/2026/a.jpg); p itself when it is not under dest.
func topItem(dest, p string) string {
	rel, err := filepath.Rel(dest, p)
	if dest == "" || err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return filepath.Join(dest, first)
}

// receivedActions are the buttons of a "Files received" notification.
func (u *UI) receivedActions(id string) []NoticeAction {
	v := u.transfers.byID[id]
	p := firstSaved(v)
	switch {
	case p != "" && v.saved == 1:
		return []NoticeAction{{Key: "default", Label: "Open", Do: func() { u.openFile(p) }},
			{Key: "show", Label: "Show in folder", Do: func() { u.showInFolder(p) }}}
	case p != "":
		return []NoticeAction{{Key: "default", Label: "Show in folder", Do: func() { u.showReceived(v) }}}
	}
	return nil
}

// isImage reports whether a file's name says it is a picture Go can decode.
func isImage(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".jpg", ".jpeg", ".png", ".gif":
		return true
	}
	return false
}

func (l *transferList) refresh(v *transferView) {
	if final := v.d != nil && v.d.Over(); final != v.final {
		v.final = final
		if final {
			l.finished++
		} else {
			l.finished-- // Retry or Resume: it runs again
		}
		l.showClear()
	}
	who := l.u.who(v.peer)
	title := "To " + who
	if v.dir == Incoming {
		title = "From " + who
	}
	if what := ItemsText(v.names, v.items, v.text); what != "" {
		title += ": " + what
	}
	if v.title.full != title {
		v.title.SetFull(title)
	}
	if v.text != "" {
		setText(v.what, clip(EscapeText(v.text), 300))
		if !v.what.Visible() {
			v.what.Show()
			v.obj.Refresh() // lay the row out again with the text in it
			l.box.Refresh()
		}
	}
	if v.skipped != nil && !v.notSent.Visible() {
		v.notSent.SetText("Not sent: " + v.skipped.Summary + " (Details lists them)")
		v.notSent.Show()
		v.obj.Refresh()
		l.box.Refresh()
	}

	var parts []string
	if v.files > 0 {
		parts = append(parts, plural(v.files, "file"))
	}
	// Bytes in place from the model: each byte once across reconnects,
	// pauses and resumes.
	inPlace := v.d.Bytes
	if v.total > 0 {
		if inPlace > 0 && !v.d.Phase.Final() {
			parts = append(parts, HumanBytes(inPlace)+" of "+HumanBytes(v.total))
		} else {
			parts = append(parts, HumanBytes(v.total))
		}
	}
	if v.state == StateActive && v.d.Phase.Running() {
		if r := HumanRate(v.progress.Rate); r != "" {
			parts = append(parts, r)
		}
		if e := HumanETA(v.progress.ETA); e != "" {
			parts = append(parts, e)
		}
	}
	// An end before a byte moved (declined, withdrawn, cancelled, expired,
	// failed to start) has no progress to show, and nothing travelled over
	// its transport: no bar, no "TCP". Done rows keep theirs full, and rows
	// that moved bytes keep theirs where they stopped.
	nothing := v.d.Phase.Final() && v.d.Phase != transfer.Done && inPlace == 0
	if v.transport != "" && !nothing {
		parts = append(parts, TransportLabel(v.transport))
	}
	if p := pathText(v); p != "" {
		parts = append(parts, p)
	}
	setText(v.sub, strings.Join(parts, " · "))

	if v.total > 0 {
		v.bar.SetValue(float64(inPlace) / float64(v.total))
	} else if v.d.Phase == transfer.Done {
		v.bar.SetValue(1)
	}
	// A bar only once a byte moved (or done): Fyne draws a 0 % bar's track
	// across its width in the primary colour at half strength, which read
	// as a full bar with "0%" on it on a row waiting for an answer, a PIN
	// or a connection, and on an end as something still to come.
	if showIf(v.bar, inPlace > 0 || v.d.Phase == transfer.Done) {
		v.obj.Refresh() // lay the row out again without (or with) the bar
		l.box.Refresh()
	}

	label, imp := l.stateText(v)
	relayout := label != v.stateLbl.Text || imp != v.stateLbl.Importance
	if relayout {
		v.stateLbl.Importance = imp
		v.stateLbl.SetText(label)
	}

	// The buttons are the model's actions: a resumed row runs again with
	// Pause and Cancel; a receiving row stopped by its sender has nothing
	// running here to cancel, and one its sender left offers to discard
	// what it kept.
	acts := v.d.Actions()
	in := v.dir == Incoming
	done := v.d.Phase == transfer.Done
	shown := false
	for _, b := range []struct {
		o    fyne.CanvasObject
		show bool
	}{
		{v.cancel, slices.Contains(acts, transfer.ActionCancel)},
		{v.pause, slices.Contains(acts, transfer.ActionPause)},
		{v.resume, slices.Contains(acts, transfer.ActionResume)},
		{v.retry, slices.Contains(acts, transfer.ActionRetry)},
		{v.discard, slices.Contains(acts, transfer.ActionDiscard)},
		{v.open, done && in && v.saved == 1 && v.dest != ""},
		{v.show, done && in && v.dest != "" && (v.saved > 0 || v.files > 0)},
		{v.copyText, v.text != "" && (done || !in)},
		{v.openLink, v.text != "" && done && in && TextLink(v.text) != nil},
	} {
		if showIf(b.o, b.show) {
			shown = true
		}
	}
	l.u.thumbnail(v)
	l.refreshPair(v)
	// Showing or hiding a button changes the buttons' width, a new state
	// text its own: lay the line out again. Not on every progress update:
	// refreshing the buttons draws their icons again.
	if shown || !v.laidOut {
		v.buttons.Refresh()
	}
	if shown || relayout || !v.laidOut {
		v.foot.Refresh()
	}
	v.laidOut = true
}

// stateText is the row's state line and its colour.
func (l *transferList) stateText(v *transferView) (string, widget.Importance) {
	st := l.status(v)
	return st.Text, st.Importance
}

// status is what the row says: the model's words for the delivery, and the
// engine's own text for Details.
func (l *transferList) status(v *transferView) Status {
	d := v.d
	st := Status{Short: string(d.Phase), Text: d.Status(), Importance: phaseImportance(d), Detail: d.Detail}
	if (d.Phase == transfer.Reconnecting || d.Phase == transfer.Connecting) && v.note != "" {
		// Why it reconnects, or why its last try to reach the device
		// failed (a send never connected), from the engine's state event.
		st.Detail = v.note
	}
	if d.Phase == transfer.Reconnecting && v.away {
		// Its Ferry was closed there: nothing reconnects until its user
		// opens it again (the engine tries for a while; then the app
		// sends when discovery sees the device back, RejoinText).
		who := d.Peer
		if who == "" {
			who = "the other device"
		}
		st.Text = fmt.Sprintf("Ferry was closed on %s: waiting for it to be opened again…", who)
	}
	if r := v.result; v.pairCode != "" && r != nil && r.Code == CodeUntrusted && r.Err != "" && d.Phase.Final() {
		// Ended over the verification code (a user saw different codes):
		// the engine's sentence says so, where the code alone reads as a
		// policy refusal.
		st.Short, st.Text, st.Importance = "Stopped: the codes differ", strings.TrimSuffix(EscapeText(r.Err), "."), widget.DangerImportance
	}
	if r := v.result; r != nil && r.NotStarted && r.Err != "" && d.Phase == transfer.Failed {
		// Its own items stopped it (a named pipe given): the engine's
		// sentence says which, where the model knows only that it failed.
		st.Short, st.Text = "Not sent", strings.TrimSuffix(EscapeText(r.Err), ".")
	}
	return st
}

// phaseImportance colours a delivery's state: danger only for what went
// wrong, warning for what waits on someone, success for done. Ends nobody
// needs to act on (cancelled, declined by you) use the plain text colour:
// the theme's "low" colour is the disabled one, which is unreadable on
// both backgrounds (issue 26, finding 8).
func phaseImportance(d *transfer.Delivery) widget.Importance {
	switch d.Phase {
	case transfer.Done:
		return widget.SuccessImportance
	case transfer.Failed:
		if d.Rejoin {
			// It waits for its device and then goes on by itself (a send
			// kept while Ferry was closed): nothing failed for good.
			return widget.WarningImportance
		}
		return widget.DangerImportance
	case transfer.Paused, transfer.Reconnecting, transfer.Interrupted, transfer.Moved:
		return widget.WarningImportance
	case transfer.Expired:
		if d.Direction == transfer.Outgoing {
			return widget.WarningImportance
		}
	case transfer.Declined:
		if d.By == transfer.Peer || d.Direction == transfer.Outgoing {
			return widget.WarningImportance
		}
	}
	return widget.MediumImportance
}

// canPause reports whether a sending transfer in state s can be paused:
// once data may flow, and while it reconnects.
func canPause(s State) bool {
	switch s {
	case StateConnecting, StateActive, StateVerifying, StateRetrying:
		return true
	}
	return false
}

// showIf shows or hides o and reports whether that changed it.
func showIf(o fyne.CanvasObject, show bool) bool {
	if o.Visible() == show {
		return false
	}
	if show {
		o.Show()
	} else {
		o.Hide()
	}
	return true
}

// discard gives up an interrupted receive: what it kept is discarded as
// Settings' Unfinished transfers discards it, after the same question
// (partialsView.confirmDiscard, which ends the row once it is done).
func (l *transferList) discard(id string) {
	v := l.byID[id]
	if v == nil {
		return
	}
	for _, p := range l.u.be.Partials() {
		if v.delivery != "" && p.Delivery == v.delivery {
			l.u.partials.confirmDiscard(p)
			return
		}
	}
	// Discarded meanwhile, or removed for its age: it cannot resume.
	l.u.showError("Nothing to discard", &Problem{Text: "Nothing of this transfer is kept any more: sent again, its files come over from the start."})
	l.act(id, transfer.ActDiscard)
}

// discarded ends the receiving rows of a delivery whose partial files
// were discarded: it will not resume.
func (l *transferList) discarded(delivery string) {
	for id, v := range l.byID {
		if delivery != "" && v.delivery == delivery && v.dir == Incoming {
			l.act(id, transfer.ActDiscard)
		}
	}
}

// retry sends a failed or cancelled transfer's files again. The new transfer
// gets its own row from its events; this row's button is spent.
func (l *transferList) retry(id string) {
	v := l.byID[id]
	if v == nil {
		return
	}
	if err := l.u.be.Retry(id); err != nil {
		l.u.showError("Could not send the files again", err)
		return
	}
	// The same delivery goes on in this row (a finished one comes back as
	// a new row of its own): it runs again, with Pause and Cancel.
	l.act(id, transfer.ActResume)
}

// plural is "1 file" or "20,000 files" (numtext.Count).
func plural(n int, what string) string { return numtext.Count(n, what) }

func (l *transferList) showDetails(id string) {
	v := l.byID[id]
	if v == nil {
		return
	}
	l.detailStatus = widget.NewLabel("")
	l.detailStatus.Wrapping = fyne.TextWrapWord
	l.detailLabel = widget.NewLabel("")
	l.detailLabel.Wrapping = fyne.TextWrapWord
	l.detailFiles = widget.NewLabel("")
	l.detailFiles.Wrapping = fyne.TextWrapBreak
	l.detailMore = widget.NewLabel("")
	l.detailMore.Wrapping = fyne.TextWrapWord
	bold := func(s string) *widget.Label {
		return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	l.detailSkippedHead = bold("Not sent")
	l.detailSkipped = widget.NewLabel("")
	l.detailSkipped.Wrapping = fyne.TextWrapBreak
	l.detailRenamedHead = bold("Sent under another name")
	l.detailRenamed = widget.NewLabel("")
	l.detailRenamed.Wrapping = fyne.TextWrapBreak
	content := container.NewVBox(
		bold("Status"), l.detailStatus,
		bold("Connection"), l.detailLabel,
		bold("Files"), l.detailFiles, l.detailMore,
		l.detailSkippedHead, l.detailSkipped,
		l.detailRenamedHead, l.detailRenamed,
	)
	scroll := container.NewVScroll(content)
	l.detailID = id
	d := dialog.NewCustomWithoutButtons("Transfer details", scroll, l.u.win)
	closeBtn := l.u.newButton("Close", nil, d.Hide)
	d.SetButtons([]fyne.CanvasObject{closeBtn})
	d.SetOnClosed(func() { l.detail, l.detailID = nil, "" })
	l.detail = d
	l.fillDetails(v)
	fitScroll(d, scroll, 520)
	l.u.showModal(d, &modal{dismiss: d.Hide, confirm: d.Hide, scroll: scroll}, closeBtn)
}

// statusText is the Status section of Details: the state in words, then
// the engine's own text about it.
func statusText(st Status) string {
	if st.Detail == "" || st.Detail == st.Text {
		return st.Text
	}
	return st.Text + "\nWhat the engine reported: " + EscapeLine(st.Detail)
}

// detailsText renders the live connection metrics of a transfer.
func detailsText(v *transferView) string {
	var b strings.Builder
	tr := TransportLabel(v.transport)
	if v.transport == "" {
		tr = "not chosen yet"
	}
	b.WriteString(transportLines(tr, v.reason))
	if p := v.d.PathText(); p != "" {
		// The path's figures: its round-trip time below, its throughput here.
		fmt.Fprintf(&b, "Path: %s\n", EscapeText(p))
		if r := HumanRate(v.progress.Rate); r != "" && v.d.Phase.Running() {
			fmt.Fprintf(&b, "Throughput: %s\n", r)
		}
	}
	m := v.metrics
	if m == nil {
		b.WriteString("No connection metrics yet.\n")
		resultLines(&b, v.result)
		return strings.TrimRight(b.String(), "\n")
	}
	if m.SmoothedRTT > 0 {
		fmt.Fprintf(&b, "Round-trip time: %s (min %s)\n", fmtDur(m.SmoothedRTT), fmtDur(m.MinRTT))
	}
	if m.CongestionControl != "" {
		fmt.Fprintf(&b, "Congestion control: %s\n", EscapeName(m.CongestionControl))
	}
	if m.CongestionWindow > 0 {
		fmt.Fprintf(&b, "Congestion window: %s\n", HumanBytes(m.CongestionWindow))
	}
	switch {
	case m.measured() && strings.EqualFold(m.Transport, "tcp"):
		fmt.Fprintf(&b, "Segments retransmitted: %d\n", m.PacketsLost)
	case m.measured():
		fmt.Fprintf(&b, "Congestion events: %d · packets lost: %d\n", m.CongestionEvents, m.PacketsLost)
	default:
		b.WriteString("The connection reported no round-trip or window figures.\n")
	}
	if m.PathMTU > 0 {
		fmt.Fprintf(&b, "Path MTU: %d bytes\n", m.PathMTU)
	}
	if m.DatagramsPerCall > 0 {
		fmt.Fprintf(&b, "Datagrams per send call: %.1f (GSO %s)\n", m.DatagramsPerCall, onOff(m.GSO))
	}
	if m.DatagramsPerRecvCall > 0 {
		fmt.Fprintf(&b, "Datagrams per receive call: %.1f (GRO %s)\n", m.DatagramsPerRecvCall, onOff(m.GRO))
	}
	if m.RecvBuffer > 0 {
		fmt.Fprintf(&b, "Socket receive buffer: %s\n", HumanBytes(int64(m.RecvBuffer)))
	}
	if m.Connections > 0 {
		fmt.Fprintf(&b, "TCP connections: %d\n", m.Connections)
	}
	resultLines(&b, v.result)
	return strings.TrimRight(b.String(), "\n")
}

// transportLines are Details' lines of the transport and why it was
// chosen. A short reason follows the transport in parentheses ("QUIC
// (chosen by the sender)"). One with figures of its own, which are the
// path's when the connection was made ("clean low-latency path (RTT
// 44.74 ms): ..."), gets a line that names that moment: the round-trip
// time below is a later one, and the two read as a contradiction side by
// side; nor do parentheses nest.
func transportLines(transport, reason string) string {
	switch {
	case reason == "":
		return "Transport: " + transport + "\n"
	case strings.ContainsAny(reason, "():"):
		return "Transport: " + transport + "\nWhy, when it connected: " + EscapeLine(reason) + "\n"
	}
	return "Transport: " + transport + " (" + EscapeLine(reason) + ")\n"
}

// resultLines are the Details lines of what a finished transfer's result
// says beyond its row: what did not travel, or travelled twice, and the
// empty folders.
func resultLines(b *strings.Builder, r *Result) {
	if r == nil {
		return
	}
	if r.Duration > 0 {
		fmt.Fprintf(b, "Took %s", humanSeconds(r.Duration))
		// The time to answer and to check what was kept are not the
		// files': said apart when long enough to notice.
		var parts []string
		moving := r.Duration
		if r.Waited >= answerShown && r.Waited < moving {
			parts = append(parts, humanSeconds(r.Waited)+" waiting for the answer to the offer")
			moving -= r.Waited
		}
		if r.Checked >= answerShown && r.Checked < moving {
			parts = append(parts, humanSeconds(r.Checked)+" checking what was kept from before")
			moving -= r.Checked
		}
		if len(parts) > 0 {
			fmt.Fprintf(b, ": %s, %s moving the files", strings.Join(parts, ", "), humanSeconds(moving))
		}
		b.WriteByte('\n')
	}
	if r.Kept > 0 {
		fmt.Fprintf(b, "Kept from an earlier attempt (not sent again): %s\n", HumanBytes(r.Kept))
	}
	if r.Resent > 0 {
		fmt.Fprintf(b, "Sent again after reconnecting: %s\n", HumanBytes(r.Resent))
	}
	if r.Packed > 0 {
		fmt.Fprintf(b, "Compressed on the way (the link was the limit): %s travelled as %s\n", HumanBytes(r.Packed), HumanBytes(r.PackedTo))
	}
	if r.Folders > 0 {
		fmt.Fprintf(b, "Empty folders made besides the files: %d\n", r.Folders)
	}
	if r.FoldersLeftOut > 0 {
		fmt.Fprintf(b, "Empty folders not sent (the receiver's Ferry is older and does not take them): %d\n", r.FoldersLeftOut)
	}
}

// answerShown is the shortest wait for the answer to an offer that
// Details says apart from the time the files took.
const answerShown = 500 * time.Millisecond

// humanSeconds is a duration for Details: "0.4 s", "12.3 s", "2 min 5 s".
func humanSeconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	d = d.Round(time.Second)
	if d < time.Hour {
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

// pathText is the row's words for the way a transfer goes ("direct",
// "through the internet (direct)", "relayed via HOST"), with the path's
// round-trip time while it runs; "" while the engine has not said.
func pathText(v *transferView) string {
	p := v.d.PathText()
	if p == "" {
		return ""
	}
	p = EscapeText(p) // the relay's host is the user's setting, or a peer's answer
	if m := v.metrics; m != nil && m.SmoothedRTT > 0 && v.d.Phase.Running() {
		p += ", " + fmtDur(m.SmoothedRTT) + " round trip"
	}
	return p
}

// onOff names a setting's state.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// finalMetrics is the result's metrics with the gaps filled from the last
// live snapshot: a closed TCP connection no longer reports its round-trip
// time or window, only its totals.
func finalMetrics(live, final *Metrics) *Metrics {
	if live == nil {
		return final
	}
	m := *final
	if m.Transport == "" {
		m.Transport = live.Transport
	}
	if m.SmoothedRTT == 0 {
		m.SmoothedRTT, m.MinRTT = live.SmoothedRTT, live.MinRTT
	}
	if m.CongestionWindow == 0 {
		m.CongestionWindow = live.CongestionWindow
	}
	if m.CongestionControl == "" {
		m.CongestionControl = live.CongestionControl
	}
	if m.PathMTU == 0 {
		m.PathMTU = live.PathMTU
	}
	if m.DatagramsPerCall == 0 {
		m.DatagramsPerCall, m.GSO = live.DatagramsPerCall, live.GSO
	}
	if m.DatagramsPerRecvCall == 0 {
		m.DatagramsPerRecvCall, m.GRO = live.DatagramsPerRecvCall, live.GRO
	}
	if m.RecvBuffer == 0 {
		m.RecvBuffer = live.RecvBuffer
	}
	if m.Connections == 0 {
		m.Connections = live.Connections
	}
	m.CongestionEvents = max(m.CongestionEvents, live.CongestionEvents)
	m.PacketsLost = max(m.PacketsLost, live.PacketsLost)
	return &m
}

// measured reports whether m holds figures the transport actually measured.
func (m *Metrics) measured() bool {
	return m.SmoothedRTT > 0 || m.CongestionWindow > 0 || m.CongestionEvents > 0 || m.PacketsLost > 0
}

func filesText(v *transferView) string {
	if v.ended == 0 {
		if v.d != nil && v.d.Phase.Final() && !v.d.Rejoin {
			// Declined, cancelled, failed before a file: none will (a
			// send that rejoins its device goes on later).
			if v.dir == Incoming {
				return "No file was received."
			}
			return "No file was sent."
		}
		return "No file finished yet."
	}
	var b strings.Builder
	// Failed files past the first come first: they are what Details is
	// opened for.
	for _, f := range append(v.failures[:len(v.failures):len(v.failures)], v.results...) {
		name := EscapeName(f.Path)
		// A Mac's decomposed name saved composed looks the same: no arrow.
		if f.SavedAs != "" && f.SavedAs != f.Path && !safetext.OnlyComposed(f.Path, f.SavedAs) {
			name += " → " + EscapeName(filepath.Base(f.SavedAs))
		}
		switch {
		case f.Err != "":
			fmt.Fprintf(&b, "✗ %s (%s): %s\n", name, HumanBytes(f.Size), EscapeLine(f.Err))
		case f.Verified && f.Kept:
			fmt.Fprintf(&b, "✓ %s (%s) verified: here already with the same bytes, kept\n", name, HumanBytes(f.Size))
		case f.Verified:
			fmt.Fprintf(&b, "✓ %s (%s) verified\n", name, HumanBytes(f.Size))
		default:
			fmt.Fprintf(&b, "• %s (%s) not verified\n", name, HumanBytes(f.Size))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// moreText counts the files past those filesText lists: a row keeps the
// first files only, and Details stays a few lines long for 10^5 of them.
func moreText(v *transferView) string {
	more := v.ended - len(v.results) - len(v.failures)
	if more <= 0 {
		return ""
	}
	what := "files"
	if more == 1 {
		what = "file"
	}
	return fmt.Sprintf("and %s more %s (of all %s: %s verified, %s failed)", HumanCount(more), what, HumanCount(v.ended), HumanCount(v.verified), HumanCount(v.failed))
}

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(100 * time.Microsecond).String()
}

func (l *transferList) fillDetails(v *transferView) {
	// Set only what changed: a label of 100 lines set again is laid out
	// again on every progress update.
	setText(l.detailStatus, statusText(l.status(v)))
	setText(l.detailLabel, detailsText(v))
	setText(l.detailFiles, filesText(v))
	setText(l.detailMore, moreText(v))
	showIf(l.detailMore, l.detailMore.Text != "")
	setText(l.detailSkipped, skippedText(v.skipped))
	showIf(l.detailSkippedHead, v.skipped != nil)
	showIf(l.detailSkipped, v.skipped != nil)
	setText(l.detailRenamed, renamedText(v.renamed))
	showIf(l.detailRenamedHead, v.renamed != nil)
	showIf(l.detailRenamed, v.renamed != nil)
}

// renamedText is Details' account of the given paths a send carries under
// another name, one a line: "/home/sam/b/report.pdf as report (1).pdf".
func renamedText(rs []Renamed) string {
	lines := make([]string, 0, len(rs)+1)
	for _, r := range rs {
		lines = append(lines, EscapeName(r.Path)+" as "+EscapeName(r.As))
	}
	if len(rs) > 0 {
		lines = append(lines, "(another of the given files or folders has its name)")
	}
	return strings.Join(lines, "\n")
}

// skippedText is Details' account of what a send leaves out: the engine's
// words, why, and the first paths; "" when it leaves out nothing.
func skippedText(s *Skipped) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.Summary + ".")
	if s.NotFiles {
		b.WriteString(" Ferry sends regular files and folders.")
	}
	for _, p := range s.Examples {
		b.WriteString("\n" + EscapeName(p))
	}
	if more := s.Count - len(s.Examples); more > 0 && len(s.Examples) > 0 {
		b.WriteString("\nand " + HumanCount(more) + " more")
	}
	return b.String()
}

// setText sets a label's text if it differs.
func setText(l *widget.Label, s string) {
	if l.Text != s {
		l.SetText(s)
	}
}

// footLayout lays out a row's state text and its buttons: on one line when
// the text fits beside the buttons, else the text above and the buttons
// below, right-aligned. The text wraps; the buttons keep their own height.
// It remembers the last width it laid out, which is what a wrapping label's
// height depends on.
type footLayout struct{ width float32 }

// oneLine reports whether the label's text fits beside the buttons in width w.
func (f *footLayout) oneLine(objs []fyne.CanvasObject, w float32) bool {
	lbl := objs[0].(*widget.Label)
	text := fyne.MeasureText(lbl.Text, theme.TextSize(), lbl.TextStyle).Width + 2*theme.InnerPadding()
	return w == 0 || text+theme.Padding()+objs[1].MinSize().Width <= w
}

func (f *footLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	f.width = size.Width
	lbl, btns := objs[0], objs[1]
	bm := btns.MinSize()
	if f.oneLine(objs, size.Width) {
		lw := size.Width - bm.Width - theme.Padding()
		lbl.Resize(fyne.NewSize(lw, lbl.MinSize().Height))
		lh := lbl.MinSize().Height
		lbl.Resize(fyne.NewSize(lw, lh))
		lbl.Move(fyne.NewPos(0, (max(lh, bm.Height)-lh)/2))
		btns.Resize(bm)
		btns.Move(fyne.NewPos(size.Width-bm.Width, (max(lh, bm.Height)-bm.Height)/2))
		return
	}
	lbl.Resize(fyne.NewSize(size.Width, lbl.MinSize().Height))
	lh := lbl.MinSize().Height
	lbl.Resize(fyne.NewSize(size.Width, lh))
	lbl.Move(fyne.NewPos(0, 0))
	btns.Resize(bm)
	btns.Move(fyne.NewPos(max(size.Width-bm.Width, 0), lh+theme.Padding()))
}

func (f *footLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	lm, bm := objs[0].MinSize(), objs[1].MinSize()
	if f.oneLine(objs, f.width) {
		return fyne.NewSize(bm.Width, max(lm.Height, bm.Height))
	}
	return fyne.NewSize(bm.Width, lm.Height+theme.Padding()+bm.Height)
}

// thumbnail shows a picture of the first received image of v, loaded off
// the Fyne goroutine once.
func (u *UI) thumbnail(v *transferView) {
	if v.thumbFor != "" || v.image == "" || v.dir != Incoming || v.dest == "" {
		return
	}
	p := filepath.Join(v.dest, filepath.FromSlash(v.image))
	v.thumbFor = p
	u.loadThumb(p, func(img image.Image) {
		v.thumb.Image = img
		v.thumb.Show()
		v.obj.Refresh() // the row grows to the picture's height
		u.transfers.box.Refresh()
	})
}

// loadThumb asks the backend for a thumbnail of p and hands it to set on
// the Fyne goroutine; pictures already loaded come from a small cache.
func (u *UI) loadThumb(p string, set func(image.Image)) {
	if img, ok := u.thumbs[p]; ok {
		if img != nil {
			set(img)
		}
		return
	}
	go func() {
		img := u.be.Thumbnail(p)
		u.opt.Do(func() {
			if len(u.thumbs) > 256 {
				clear(u.thumbs)
			}
			u.thumbs[p] = img
			if img != nil {
				set(img)
			}
		})
	}()
}
