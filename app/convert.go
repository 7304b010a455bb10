package app

import (
	"cmp"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// This file translates engine and discovery values into the UI's terms.

var transferKinds = map[engine.EventKind]ui.TransferEventKind{
	engine.EventOffer:      ui.TransferOffer,
	engine.EventQueued:     ui.TransferQueued,
	engine.EventState:      ui.TransferState,
	engine.EventProgress:   ui.TransferProgress,
	engine.EventFile:       ui.TransferFile,
	engine.EventMetrics:    ui.TransferMetrics,
	engine.EventTransport:  ui.TransferTransport,
	engine.EventResult:     ui.TransferResult,
	engine.EventPath:       ui.TransferPath,
	engine.EventPair:       ui.TransferPair,
	engine.EventKeyChanged: ui.TransferKeyChanged,
}

// codeShown maps what the receiver said of a code to the UI's word.
var codeShown = map[engine.CodeShown]ui.CodeShown{
	engine.CodeShownPending: ui.CodeShownPending,
	engine.CodeShownYes:     ui.CodeShownYes,
	engine.CodeShownNo:      ui.CodeShownNo,
	engine.CodeShownUnknown: ui.CodeShownUnknown,
	engine.CodeShownWaiting: ui.CodeShownWaiting,
	engine.CodeShownQueued:  ui.CodeShownQueued,
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func toUIDirection(d engine.Direction) ui.Direction {
	if d == engine.Receiving {
		return ui.Incoming
	}
	return ui.Outgoing
}

func toUIMetrics(m *engine.Metrics) *ui.Metrics {
	if m == nil {
		return nil
	}
	return &ui.Metrics{
		Transport:            m.Transport,
		SmoothedRTT:          msDur(m.SmoothedRTTms),
		MinRTT:               msDur(m.MinRTTms),
		CongestionWindow:     m.CongestionWindow,
		CongestionEvents:     m.CongestionEvents,
		PacketsLost:          m.PacketsLost,
		PathMTU:              m.PathMTU,
		DatagramsPerCall:     m.DatagramsPerCall(),
		GSO:                  m.GSO,
		DatagramsPerRecvCall: m.DatagramsPerRecvCall(),
		GRO:                  m.GRO,
		RecvBuffer:           m.RecvBuffer,
		Connections:          m.Connections,
		CongestionControl:    m.CongestionControl,
	}
}

// toUITransfer converts one engine event; ok is false for kinds the UI does not know.
// toUIPeer is the other end of a transfer, with what a LocalSend device
// said of itself.
func toUIPeer(p engine.PeerInfo) ui.Peer {
	return ui.Peer{ID: p.ID, Name: p.Name, Trusted: p.Trusted, Addr: p.Addr, LocalSend: p.Protocol == engine.ProtocolLocalSend,
		Model: p.Model, DeviceType: p.DeviceType, Fingerprint: p.Fingerprint, Unverified: p.Unverified}
}

func toUITransfer(ev engine.Event) (ui.TransferEvent, bool) {
	kind, ok := transferKinds[ev.Kind]
	if !ok {
		return ui.TransferEvent{}, false
	}
	out := ui.TransferEvent{
		Kind:      kind,
		ID:        ev.TransferID,
		Delivery:  ev.Delivery,
		Direction: toUIDirection(ev.Direction),
		Peer:      toUIPeer(ev.Peer),
		State:     ui.State(ev.State),
		Metrics:   toUIMetrics(ev.Metrics),
		Time:      ev.Time,
	}
	if o := ev.Offer; o != nil {
		uo := &ui.Offer{Count: o.Count, Total: o.TotalBytes, Disk: o.DiskBytes, Dest: o.Dest, FreeBytes: o.FreeBytes, Expires: o.Expires, Text: o.Text,
			PairCode: o.PairCode}
		for _, f := range o.Files {
			uo.Files = append(uo.Files, ui.FileInfo{Path: f.Path, Size: f.Size, Refused: f.Refused})
		}
		for _, f := range o.Folders {
			uo.Folders = append(uo.Folders, ui.FolderInfo{Path: f.Path, Files: f.Files, Bytes: f.Bytes})
		}
		if s := o.Skipped; s != nil && s.Count() > 0 {
			uo.Skipped = &ui.Skipped{Summary: s.Summary(), Count: s.Count(), Examples: s.Examples, NotFiles: s.Symlinks+s.Other > 0}
		}
		for _, r := range o.Renamed {
			uo.Renamed = append(uo.Renamed, ui.Renamed{Path: r.Path, As: r.As})
		}
		out.Offer = uo
	}
	if p := ev.Progress; p != nil {
		out.Progress = &ui.Progress{Bytes: p.Bytes, Total: p.TotalBytes, Files: p.Files, TotalFiles: p.TotalFiles,
			Rate: p.Rate, ETA: time.Duration(p.ETA * float64(time.Second))}
	}
	if f := ev.File; f != nil {
		out.File = &ui.FileResult{Path: f.Path, SavedAs: f.SavedAs, Size: f.Size, Verified: f.Verified, Root: f.Root, Err: f.Err, Kept: f.Kept}
	}
	if t := ev.Transport; t != nil {
		out.Transport, out.Reason, out.Route, out.Relay = t.Name, t.Reason, t.Route, t.Relay
	}
	if p := ev.Path; p != nil {
		out.Path = &ui.PathChange{Moved: p.Moved, From: p.From, To: p.To, Reason: p.Reason, Stall: msDur(p.StallMs)}
	}
	if p := ev.Pair; p != nil {
		out.Pair = &ui.PairCode{Code: p.Code, Only: p.Only, Shown: codeShown[p.Shown], Ahead: p.Ahead}
	}
	if k := ev.KeyChange; k != nil {
		out.KeyChange = &ui.KeyChange{
			Known:       ui.Peer{ID: k.Known.ID, Name: k.Known.Name, Trusted: k.Known.Trusted, Addr: k.Known.Addr},
			PresentedID: k.PresentedID, Warning: k.Warning}
	}
	if r := ev.Result; r != nil {
		out.Result = &ui.Result{State: ui.State(r.State), Code: ui.Code(r.Code), ByPeer: r.ByPeer, Err: r.Err,
			Files: r.Files, Verified: r.Verified, Bytes: r.Bytes,
			Duration: time.Duration(r.Duration * float64(time.Second)), Waited: time.Duration(r.Waited * float64(time.Second)), Checked: time.Duration(r.Checked * float64(time.Second)), Transport: r.Transport, TransportReason: r.Reason,
			Resent: r.Resent, Kept: r.Kept, Packed: r.Packed, PackedTo: r.PackedTo, Folders: r.Folders, FoldersLeftOut: r.FoldersLeftOut, Refused: r.Refused, Destination: r.Destination, Metrics: toUIMetrics(r.Metrics), Text: r.Text}
		if out.State == "" {
			out.State = out.Result.State
		}
	}
	return out, true
}

// intent is what this device did to a transfer and saw of it, which the
// engine's result does not say: whether the user cancelled it here, whether
// the prompt answered (and whether it answered because nobody did), and
// what was offered.
type intent struct {
	cancelled bool
	decided   bool
	expired   bool
	offer     *ui.Offer
	sent      []string // the files and folders this device sent (absolute)
	saved     []string // the first files received, as saved (relative)
}

// fillOutcome sets r.Code and r.ByPeer where the engine left them empty
// (an older engine's events, or states it reports without a code),
// from the state it reported and what this device did (in); at is when the
// transfer ended, quitting whether Ferry is closing. It also counts the
// offered files of an offer that ended unaccepted, which the engine reports
// as none.
func fillOutcome(r *ui.Result, dir ui.Direction, in intent, at time.Time, quitting bool) {
	incoming := dir == ui.Incoming
	if r.Code == ui.CodeNone {
		switch r.State {
		case ui.StateCancelled:
			// Closing Ferry cancels what runs; that was this side too.
			r.Code, r.ByPeer = ui.CodeCancelled, !in.cancelled && !quitting
		case ui.StateDeclined:
			switch {
			case !incoming:
				r.Code, r.ByPeer = ui.CodeDeclined, true
			case in.expired:
				r.Code = ui.CodeExpired
			case in.decided:
				r.Code = ui.CodeDeclined
			}
			// Incoming and undecided: the engine's policy declined it
			// (no space, untrusted, busy); the code stays unknown.
		case ui.StateFailed:
			// The engine ends an unanswered offer itself when its own
			// prompt timer fires; the user never answered, and the offer's
			// deadline had passed.
			if incoming && in.offer != nil && !in.decided && !in.offer.Expires.IsZero() && !at.Before(in.offer.Expires) || in.expired {
				r.Code = ui.CodeExpired
			}
		}
	}
	if r.State != ui.StateDone && in.offer != nil {
		// An offer that ended before any byte arrived: say what was offered.
		if r.Files == 0 {
			r.Files = in.offer.FileCount()
		}
		if r.Bytes == 0 {
			r.Bytes = in.offer.Total
		}
	}
}

// historyEntry is what the history keeps of a finished transfer: in is
// what this device saw of it (what was offered, sent and saved), d its
// delivery in the transfer model (nil when unknown), whose bytes count each
// byte once across reconnects and resumes and whose reason knows whether
// the other device was ever reached.
func historyEntry(ev ui.TransferEvent, in intent, d *transfer.Delivery) ui.HistoryEntry {
	r := ev.Result
	e := ui.HistoryEntry{
		ID: ev.ID, Delivery: ev.Delivery, Direction: ev.Direction, PeerName: ev.Peer.Name, PeerID: ev.Peer.ID,
		Files: r.Files, Folders: r.Folders, Bytes: r.Bytes, State: r.State, Code: r.Code, ByPeer: r.ByPeer, Err: r.Err,
		Transport: r.Transport, Destination: r.Destination, Finished: ev.Time, Duration: r.Duration.Seconds(),
		Text: r.Text,
	}
	if in.offer != nil {
		e.Names, e.Items = ui.OfferNames(in.offer)
		if len(e.Names) > 3 {
			e.Names = e.Names[:3]
		}
		if e.Text == "" && ev.Direction == ui.Outgoing {
			e.Text = in.offer.Text // what was offered, even if not taken
		}
	}
	if len(e.Names) == 0 && ev.Direction == ui.Outgoing && len(in.sent) > 0 {
		// A send from the app has no offer event of its own: name the
		// files and folders it sent, so History search finds it as it
		// finds a CLI send (issue 26, finding 5).
		for _, p := range in.sent {
			if len(e.Names) < 3 {
				e.Names = append(e.Names, filepath.Base(p))
			}
		}
		e.Items = len(in.sent)
	}
	if d != nil {
		if d.Bytes > 0 {
			// The engine's result counts bytes sent again after a
			// reconnect (issue 26, finding 3).
			e.Bytes = d.Bytes
		}
		if d.Phase == transfer.Failed && d.Reason != transfer.Reason(r.Code) {
			// "connection refused" while reconnecting is no read error.
			e.Code = ui.Code(d.Reason)
		}
		e.HasText = d.Text
		if len(e.Names) == 0 {
			for _, f := range d.Files {
				if len(e.Names) == 3 {
					break
				}
				e.Names = append(e.Names, f.Path)
			}
			if len(e.Names) > 0 {
				e.Items = max(e.Items, d.Count)
			}
		}
	}
	switch {
	case ev.Direction == ui.Outgoing:
		e.Paths = in.sent
	case r.Destination != "":
		for _, rel := range in.saved {
			e.Paths = append(e.Paths, filepath.Join(r.Destination, filepath.FromSlash(rel)))
		}
	}
	if len(e.Paths) > maxHistoryPaths {
		e.Paths = e.Paths[:maxHistoryPaths]
	}
	if ev.Direction == ui.Incoming && r.Code == ui.CodeBusy && !r.ByPeer {
		// Declined by this device's limits, not by the user: the history
		// sums such offers up (historyStore.add).
		e.Busy, e.Since = 1, ev.Time
		if ev.Peer.ID != "" {
			e.Senders = []ui.BusySender{{ID: ev.Peer.ID, Name: ev.Peer.Name}}
		}
	}
	return e
}

// refusedEntry is what the history keeps of offers this device's limits
// refused before reading them (engine.EventRefused): offers declined while
// busy (historyStore.add sums them up with the others), whose files are
// not known. Devices are named as the user named them.
func (b *backend) refusedEntry(ev engine.Event) ui.HistoryEntry {
	r := ev.Refused
	e := ui.HistoryEntry{
		ID:        fmt.Sprintf("refused-%d-%s-%s", ev.Time.UnixNano(), r.Reason, ev.Peer.Addr),
		Direction: ui.Incoming, PeerID: ev.Peer.ID, PeerName: cmp.Or(b.devices.nickname(ev.Peer.ID), ev.Peer.Name),
		State: ui.StateDeclined, Code: ui.CodeBusy, Err: refusalWords[r.Reason],
		Finished: r.Last, Since: r.First, Busy: r.Count, Unread: r.Count, MoreSenders: r.MoreDevices,
	}
	if e.PeerID == "" {
		e.PeerName = ""
	}
	if r.Reason == engine.RefusedMuted || r.Reason == engine.RefusedMutedAddress {
		e.Muted = r.Count
	}
	for _, d := range r.Devices {
		e.Senders = append(e.Senders, ui.BusySender{ID: d.ID, Name: cmp.Or(b.devices.nickname(d.ID), d.Name)})
	}
	return e
}

// refusalWords says why offers were refused unread (History's Details).
var refusalWords = map[engine.RefusalReason]string{
	engine.RefusedBusy:         "too many devices were offering files to this one at once",
	engine.RefusedNewDevices:   "too many new devices offered files from one network address",
	engine.RefusedMuted:        "you declined offers from the device a moment ago",
	engine.RefusedMutedAddress: "you declined offers from other new devices at its network address a moment ago",
	engine.RefusedLargeOffers:  "other large offers were held at once",
}

// toUIDevice converts a discovery peer.
func toUIDevice(p discovery.Peer, tr trust, online bool) ui.Device {
	d := ui.Device{
		ID: p.ID, Name: p.Name, OS: p.OS, Trusted: tr.trusted, Known: tr.known, Paired: tr.paired, Online: online,
		LastSeen: p.LastSeen, Source: string(p.Source), Addrs: p.Addresses(),
	}
	if ls := p.LocalSend; ls != nil {
		d.LocalSend = &ui.LocalSendInfo{Model: ls.DeviceModel, Type: ls.DeviceType, Fingerprint: ls.Fingerprint, Verified: ls.Verified}
		if d.Name == "" {
			d.Name = ls.Alias
		}
	}
	return d
}

// lastAddrs is where a trusted peer was last reached, over every kind the
// engine dials.
func lastAddrs(t engine.TrustedPeer) []addr.Addr {
	if t.LastAddr == "" {
		return nil
	}
	return engine.AddrsAt(t.LastAddr)
}

// rememberedDevice is a trusted peer that discovery does not see right now.
func rememberedDevice(t engine.TrustedPeer) ui.Device {
	return ui.Device{ID: t.ID, Name: t.Name, Trusted: t.AlwaysAccept, Known: true, Paired: t.Paired, Online: false, LastSeen: t.LastSeen,
		Source: "remembered", Addrs: lastAddrs(t)}
}

// trust is what the engine's trust store says about a device.
type trust struct{ known, trusted, paired bool }

// trustOf looks a device up in the engine's trust store: known means its key
// is pinned from an earlier exchange, trusted that its offers are accepted
// without asking (the engine's PeerInfo.Trusted), paired that the user
// compared its verification code.
func trustOf(peers []engine.TrustedPeer, id string) trust {
	for _, t := range peers {
		if t.ID == id {
			return trust{known: true, trusted: t.AlwaysAccept, paired: t.Paired}
		}
	}
	return trust{}
}
