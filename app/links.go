package app

import (
	"context"
	"errors"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/ui"
)

// Browser links (issue 25): the app's side of the engine's links
// (Engine.ShareLink, ReceiveLink, StopLink and EventLink). The link server
// is a row of the engine's receiver table, so links live while receiving
// is on (a share link outlives "receiving off"; a receive link does not)
// and all end when Ferry quits. A receive link's files are receiving
// transfers of the engine, whose events reach the window and the history
// like any other.

// linkTick is how often an open link's state is sent again without an
// event of its own, so "ends in 12 min" stays true.
const linkTick = 30 * time.Second

var _ ui.Links = (*backend)(nil)

// OpenLink opens a share or receive link and reports its states.
func (b *backend) OpenLink(ctx context.Context, req ui.LinkRequest) (<-chan ui.LinkState, error) {
	if b.settings.get().Policy == ui.PolicyOff {
		return nil, errReceivingOff // the engine serves links while it receives
	}
	if req.Expire <= 0 {
		req.Expire = ui.DefaultLinkExpire
	}
	// Subscribed first, so that no event of the new link is missed.
	events, unsub := b.eng.Subscribe(64)
	opts := engine.LinkOptions{Expire: req.Expire, PIN: req.PIN}
	var (
		info engine.LinkInfo
		err  error
	)
	switch req.Kind {
	case ui.LinkShare:
		opts.Once = req.Once
		info, err = b.eng.ShareLink(ctx, req.Paths, opts)
	case ui.LinkReceive:
		info, err = b.eng.ReceiveLink(opts)
	default:
		err = errors.New("unknown kind of link")
	}
	if err != nil {
		unsub()
		if errors.Is(err, store.ErrNotWritable) {
			// Said as the link is asked for, not to the first person who
			// sends through it; why (read-only, permission) under Details.
			return nil, &ui.Problem{Text: unwritableText(b.eng.DownloadDir(), "no file could arrive through a receive link"), Err: err}
		}
		return nil, linkProblem(err)
	}
	out := make(chan ui.LinkState, 1)
	out <- toLinkState(info, req)
	go b.followLink(info.ID, req, events, unsub, out)
	return out, nil
}

// StopLink ends a link at once.
func (b *backend) StopLink(id string) error {
	if err := b.eng.StopLink(id); errors.Is(err, engine.ErrNoLink) {
		return errors.New("this link has ended already")
	} else if err != nil {
		return err
	}
	return nil
}

// followLink turns the engine's events about link id into states until
// the link ends (or Ferry quits).
func (b *backend) followLink(id string, req ui.LinkRequest, events <-chan engine.Event, unsub func(), out chan ui.LinkState) {
	defer close(out)
	defer unsub()
	tick := time.NewTicker(linkTick)
	defer tick.Stop()
	send := func(s ui.LinkState) {
		// The newest state replaces one the UI has not taken yet.
		select {
		case out <- s:
		default:
			select {
			case <-out:
			default:
			}
			out <- s // the only sender: there is room now
		}
	}
	for {
		var info engine.LinkInfo
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Kind != engine.EventLink || ev.Link == nil || ev.Link.ID != id {
				continue
			}
			info = *ev.Link
		case <-tick.C:
			var open bool
			if info, open = b.eng.Link(id); !open {
				// Ended while no event reached us (the bus drops for a
				// slow reader): say it ended.
				send(ui.LinkState{ID: id, Kind: req.Kind, Ended: true, Why: "The link ended."})
				return
			}
		case <-b.ctx.Done():
			return
		}
		send(toLinkState(info, req))
		if info.Ended {
			return
		}
	}
}

// toLinkState is the engine's view of a link in the UI's terms.
func toLinkState(in engine.LinkInfo, req ui.LinkRequest) ui.LinkState {
	s := ui.LinkState{ID: in.ID, Kind: req.Kind, URLs: in.URLs, Expires: in.Expires, PIN: req.PIN, Once: req.Once,
		Files: in.FileCount, Bytes: in.TotalBytes, Devices: in.Devices, Ended: in.Ended, Why: in.Err,
		WrongPINs: in.WrongPINs, PINLocked: in.PINLocked, TurnedAway: in.TurnedAway}
	if len(in.URLs) > 0 {
		s.URL = in.URLs[0]
	}
	if in.Skipped != nil {
		s.Skipped = in.Skipped.Summary()
	}
	if s.Ended && s.Why == "" {
		s.Why = "The link ended: it answers nothing any more."
	}
	for _, a := range in.Activities {
		s.Activities = append(s.Activities, ui.LinkActivity{ID: a.ID, Device: a.Device, Upload: a.Upload, Folder: a.Folder, Name: a.Name, Zip: a.Zip,
			Size: a.Size, Bytes: a.Bytes, Done: a.Done, SavedAs: a.SavedAs, LeftOut: a.LeftOut, Err: a.Err})
	}
	return s
}

// errReceivingOff: a link asked for while the user turned receiving off.
var errReceivingOff = &ui.Problem{Text: "Receiving is off, and links are served only while it is on. Turn receiving on (Settings, or the tray) first."}

// linkProblem turns the engine's errors into the sentence the user sees.
func linkProblem(err error) error {
	switch {
	case errors.Is(err, weblink.ErrNothingToShare):
		return &ui.Problem{Text: "There is no file to share there: folders are shared with the files inside them, and links, devices and empty folders are left out.", Err: err}
	case errors.Is(err, weblink.ErrTooManyFiles):
		// "a million": weblink.MaxShareFiles.
		return &ui.Problem{Text: "Those folders hold more than a million files, too many to share by link. Share a smaller folder, or send them to a Ferry device.", Err: err}
	}
	return err
}
