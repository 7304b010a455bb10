package app

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/app/autostart"
	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/opener"
	"github.com/ferrydrop/ferry/ui"
)

// backend is the thin adapter that gives the UI the engine, discovery,
// settings and history behind ui.Backend.
type backend struct {
	ctx      context.Context // ends when the app quits
	eng      *engine.Engine
	disc     *discovery.Discovery
	settings *settingsStore
	history  *historyStore
	devices  *deviceStore // the user's own names for devices
	// sends keeps the sends under way across a restart (sends.go).
	sends *sendStore
	// autostartArgs start this instance again at login (its --config).
	autostartArgs []string
	// synthetic delivers events the engine never sees (a send that could
	// not even start) to the UI's transfer stream.
	synthetic func(ui.TransferEvent)
	// advertiseOpts tune the mDNS advertisement (tests keep it off the network).
	advertiseOpts []discovery.AdvertiseOption
	// openFolder shows a folder in the file manager; a failure it finds out
	// about later (no handler) goes to problem.
	openFolder func(path string) error
	// problem shows an error that happened after the call that caused it
	// returned. May be nil.
	problem func(what string, err error)
	// portDir, when set, is where the port the listeners got is saved, to
	// be used again when the default port is taken (port.go).
	portDir string
	// ls runs LocalSend's server and announcements (localsend.go).
	ls lsHub
	// anywhere serves through the settings' relay (anywhere.go).
	anywhere anywhereHub
	// askPIN asks the user for the PIN a LocalSend receiver wants (wrong:
	// the last one was refused); nil gives up with "a PIN is required".
	askPIN func(ctx context.Context, device string, wrong bool) (string, error)

	// starting counts the sends start has begun until each has its
	// transfer or its failed row (tests wait for them).
	starting sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	adv     *discovery.Advertiser
	names   map[string]ui.Peer // outgoing transfer ID -> the device it goes to
	intents map[string]*intent // transfer ID -> what this device did to it
	// pairings are the transfers that pair without files (Pair, or a
	// device asking), from their start to their result.
	pairings  map[string]bool
	nextLocal int

	// rejoin sends the rest of a send whose receiver went away when
	// discovery sees that device again (rejoin.go).
	rejoin rejoin
}

var _ ui.Backend = (*backend)(nil)
var _ ui.SendKeeper = (*backend)(nil)

// Send starts a transfer in the background: reading the files can take a
// while and must not freeze the window.
func (b *backend) Send(dev ui.Device, items ui.Items) error {
	if len(dev.Addrs) == 0 && (b.anywhere.sendVia() == "" || !dev.Trusted || dev.ID == "") {
		return &ui.Problem{Text: "Ferry does not know where this device is right now. Wait until it shows as online, or add it by address."}
	}
	if to, ok := lsTarget(dev); ok {
		b.sendLocalSend(dev, to, items)
		return nil
	}
	b.sendFerry(dev, items, "")
	return nil
}

// sendFerry starts a send of items to the Ferry device dev in the
// background: a new one, or (delivery set) the delivery an earlier run of
// the app did not finish (sends.go), whose row reports it if it cannot
// start. A send to a device with an ID is kept (b.sends) until it ends.
func (b *backend) sendFerry(dev ui.Device, items ui.Items, delivery string) {
	// With an ID the addresses are only where the device was seen: every
	// attempt, reconnect and Resume looks it up again (engine.Target.Follow).
	to := b.anywhere.target(engine.Target{Addrs: dev.Addrs, ID: dev.ID, Follow: dev.ID != ""}, dev)
	peer := ui.Peer{ID: dev.ID, Name: dev.Name, Trusted: dev.Trusted}
	b.start(peer, items.Paths, delivery, func() (*engine.Transfer, error) {
		its := engine.Items{Paths: items.Paths, Text: items.Text}
		var t *engine.Transfer
		var err error
		if delivery == "" {
			t, err = b.eng.SendItems(b.ctx, to, its, engine.SendOptions{})
		} else {
			t, err = b.eng.Continue(b.ctx, delivery, to, its, engine.SendOptions{})
		}
		if delivery != "" && errors.Is(err, engine.ErrStillRunning) {
			return nil, nil // resumed already (Retry, and the device seen at once): its row runs
		}
		if err != nil {
			if delivery != "" && b.ctx.Err() == nil {
				// Its row says why; nothing of it can go on (its files are
				// the trouble): it does not come back at the next start.
				b.sendEnded(delivery)
			}
			return nil, err
		}
		b.keepSend(t, dev)
		if dev.ID != "" && b.disc != nil && len(dev.Addrs) > 0 {
			// The advertised ID is only a hint: if TLS proves another device
			// there, discovery must stop offering that address for this ID.
			go func() {
				<-t.Done()
				if r := t.Result(); r.PresentedID != "" {
					b.disc.ReportMismatch(dev.ID, r.PresentedID, dev.Addrs[0].HostPort())
				}
			}()
		}
		return t, nil
	})
}

// keepSend keeps t, a Ferry send to dev, for the next start of the app
// until it ends (sends.go). A send that runs waits for no device (rejoin):
// the same files dropped again continue a delivery shown at the start.
func (b *backend) keepSend(t *engine.Transfer, dev ui.Device) {
	b.rejoin.drop(t.ID())
	items := t.Items()
	if dev.ID == "" || len(items.Paths) > maxSendPaths {
		return
	}
	if id, err := peer.Parse(dev.ID); err != nil || id.Kind == peer.LocalSend {
		return
	}
	err := b.sends.add(unfinishedSend{Delivery: t.ID(), PeerID: dev.ID, PeerName: dev.Name, Addrs: dev.Addrs,
		Paths: items.Paths, Text: items.Text, Started: time.Now()})
	if err != nil {
		slog.Warn("the send is not kept for the next start", "err", err)
	}
}

// sendEnded forgets the kept send of delivery id: it ended.
func (b *backend) sendEnded(id string) {
	if err := b.sends.remove(id); err != nil {
		slog.Warn("an ended send is still kept for the next start", "delivery", id, "err", err)
	}
}

// resumeSends shows each send that an earlier run of the app did not
// finish (sends.go) as a row stopped by Ferry's closing, with Retry and
// Cancel, and has it wait for its device: discovery seeing the device
// sends the rest, once, as it does for a device that went away (rejoin).
// Call it before discovery runs: a device seen at once is not missed.
func (b *backend) resumeSends() {
	for _, s := range b.sends.list() {
		peer := b.keptPeer(s)
		offer := &ui.Offer{Text: s.Text}
		for _, p := range s.Paths {
			f := ui.FileInfo{Path: filepath.Base(p)}
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				f.Size = st.Size()
			}
			offer.Files = append(offer.Files, f)
			offer.Total += f.Size
		}
		offer.Count = len(offer.Files)
		ev := ui.TransferEvent{ID: s.Delivery, Delivery: s.Delivery, Direction: ui.Outgoing, Peer: peer, Time: s.Started}
		off, res := ev, ev
		off.Kind, off.Offer = ui.TransferOffer, offer
		res.Kind, res.State, res.Time = ui.TransferResult, ui.StateFailed, time.Now()
		res.Result = &ui.Result{State: ui.StateFailed, Code: ui.CodeClosedHere, Rejoin: true,
			Err: "Ferry was closed (or stopped) before this send finished."}
		b.rejoin.wait(s.Delivery, s.PeerID)
		b.synthetic(off)
		b.synthetic(res)
	}
}

// keptPeer is the device of s, a send kept from an earlier run of the
// app, named as the user named it.
func (b *backend) keptPeer(s unfinishedSend) ui.Peer {
	peer := ui.Peer{ID: s.PeerID, Name: s.PeerName}
	if n := b.devices.nickname(s.PeerID); n != "" {
		peer.Name = n
	}
	return peer
}

// resumeSend goes on with s, a send an earlier run of the app did not
// finish, to where its device is now (discovery), else where it was.
func (b *backend) resumeSend(s unfinishedSend) error {
	dev := ui.Device{ID: s.PeerID, Name: s.PeerName, Addrs: s.Addrs, Trusted: b.trust(s.PeerID).trusted}
	if b.disc != nil {
		for _, p := range b.disc.Peers() {
			if p.ID == s.PeerID && len(p.Addresses()) > 0 {
				dev.Addrs = p.Addresses()
			}
		}
	}
	if len(dev.Addrs) == 0 {
		for _, t := range b.eng.Trusted() {
			if t.ID == s.PeerID {
				dev.Addrs = lastAddrs(t)
			}
		}
	}
	if len(dev.Addrs) == 0 && (b.anywhere.sendVia() == "" || !dev.Trusted) {
		b.rejoin.wait(s.Delivery, s.PeerID)
		return &ui.Problem{Text: fmt.Sprintf("Ferry does not know where %s is right now. It sends the rest when it sees that device again.", ui.EscapeName(s.PeerName))}
	}
	b.sendFerry(dev, ui.Items{Paths: s.Paths, Text: s.Text}, s.Delivery)
	return nil
}

// start runs send in the background and names the transfer it starts after
// peer (paths are what it sends, for the history); a transfer that cannot
// even start is reported as a failed row: row's, or a new one. A send
// that returns neither started nothing new and is left alone.
func (b *backend) start(peer ui.Peer, paths []string, row string, send func() (*engine.Transfer, error)) {
	b.starting.Add(1)
	go func() {
		defer b.starting.Done()
		t, err := send()
		if t == nil && err == nil {
			return
		}
		if err != nil {
			id := row
			if id == "" {
				b.mu.Lock()
				b.nextLocal++
				id = fmt.Sprintf("local-%d", b.nextLocal)
				b.mu.Unlock()
			}
			b.synthetic(ui.TransferEvent{Kind: ui.TransferResult, ID: id, Direction: ui.Outgoing, Peer: peer,
				State: ui.StateFailed, Result: &ui.Result{State: ui.StateFailed, NotStarted: true, Err: "The transfer could not start: " + err.Error() + "."}})
			return
		}
		b.mu.Lock()
		b.names[t.ID()] = peer
		b.mu.Unlock()
		if len(paths) > 0 {
			b.intend(t.ID(), func(in *intent) { in.sent = paths })
		}
	}()
}

// Pause pauses a sending transfer.
func (b *backend) Pause(id string) error { return b.eng.Pause(id) }

// Resume continues a paused sending transfer.
func (b *backend) Resume(id string) error { return b.eng.Resume(id) }

// Retry sends a finished sending transfer's files again in the background
// (the engine re-reads the files); the new transfer reports like Send's.
func (b *backend) Retry(id string) error {
	b.rejoin.drop(id) // the user's Retry (or the rejoin's own) replaces the wait
	if _, err := b.eng.Transfer(id); err != nil {
		if s, ok := b.sends.get(id); ok {
			// A send an earlier run of the app did not finish.
			return b.resumeSend(s)
		}
		return errors.New("this transfer is no longer known here (Ferry was restarted since it ran): send the files again")
	}
	var peer ui.Peer
	var paths []string
	for _, e := range b.history.list() {
		if e.ID == id {
			peer = ui.Peer{ID: e.PeerID, Name: e.PeerName}
			paths = e.Paths
			break
		}
	}
	b.start(peer, paths, "", func() (*engine.Transfer, error) {
		t, err := b.eng.Retry(b.ctx, id)
		if errors.Is(err, engine.ErrStillRunning) {
			// The rejoin's Retry and the user's at once: the other one
			// runs it, in its row.
			return nil, nil
		}
		if err == nil {
			b.keepSend(t, ui.Device{ID: peer.ID, Name: peer.Name})
		}
		return t, err
	})
	return nil
}

// deviceBack is discovery seeing the device with id appear (again): the
// sends that stopped when it went away go on.
func (b *backend) deviceBack(id string) { b.rejoin.back(id, b.Retry) }

// Partials lists unfinished incoming transfers.
func (b *backend) Partials() []ui.PartialTransfer {
	ps := b.eng.Partials()
	out := make([]ui.PartialTransfer, len(ps))
	for i, p := range ps {
		out[i] = ui.PartialTransfer{Key: p.Key, Delivery: p.Delivery, PeerID: p.PeerID, PeerName: p.PeerName, Dest: p.Dest, Files: p.Files,
			Saved: p.Saved, Bytes: p.OnDisk, Updated: p.Updated, Receiving: p.Receiving, Damaged: p.Damaged, Unremoved: p.Unremoved}
		if p.Unremoved {
			out[i].Files = len(p.Partials) // its files are those partials
		}
	}
	return out
}

// DiscardPartial deletes an unfinished transfer's partial files.
func (b *backend) DiscardPartial(key string) error {
	err := b.eng.DiscardPartial(key)
	if errors.Is(err, engine.ErrPartialInUse) {
		return &ui.Problem{Text: "That transfer is being received now: cancel it in Transfers first, then discard what it kept."}
	}
	return err
}

// fillPeer names the peer of an outgoing transfer before its handshake did.
func (b *backend) fillPeer(ev *ui.TransferEvent) {
	if ev.Direction != ui.Outgoing {
		return
	}
	b.mu.Lock()
	p, ok := b.names[ev.ID]
	if ok && ev.Kind == ui.TransferResult {
		delete(b.names, ev.ID)
	}
	b.mu.Unlock()
	if !ok {
		return
	}
	if ev.Peer.Name == "" {
		ev.Peer.Name = p.Name
	}
	if ev.Peer.ID == "" {
		ev.Peer.ID = p.ID
	}
}

func (b *backend) Decide(id string, d ui.Decision) error {
	b.intend(id, func(in *intent) { in.decided, in.expired = true, d.Expired })
	err := b.eng.Decide(id, engine.Decision{Accept: d.Accept, AlwaysAccept: d.AlwaysAccept, Reason: d.Reason, Expired: d.Expired, Dest: d.Dest})
	if err != nil && d.Dest != "" {
		return &ui.Problem{Text: folderProblem(d.Dest, err) + " Choose another one.", Err: err}
	}
	return err
}

// unwritableFolder is what the user reads when files cannot be made in
// the download folder dir (a stick remounted read-only, a folder this user
// may no longer write in), what then fails, why under Details; nil when
// they can be, or where store.Writable cannot tell.
func unwritableFolder(dir, fails string) *ui.Problem {
	err := store.Writable(dir)
	if err == nil {
		return nil
	}
	return &ui.Problem{Text: unwritableText(dir, fails), Err: err}
}

// unwritableText says that the download folder dir cannot be written, so
// fails, and what to do about it.
func unwritableText(dir, fails string) string {
	return fmt.Sprintf("The download folder %s cannot be written, so %s. Choose another folder in Settings, or make this one writable.", dir, fails)
}

// folderProblem is the sentence for a folder that cannot take received
// files, with the reason where the engine gave one.
func folderProblem(dir string, err error) string {
	var de *engine.DownloadDirError
	if errors.As(err, &de) {
		return fmt.Sprintf("The folder %s cannot be used for received files: %s.", de.Dir, de.Why)
	}
	return fmt.Sprintf("The folder %s cannot be used for received files.", dir)
}

func (b *backend) Cancel(id string) error {
	b.intend(id, func(in *intent) { in.cancelled = true })
	if b.rejoin.drop(id) {
		kept, _ := b.sends.get(id) // before it is forgotten: History names its files
		b.sendEnded(id)
		return b.gaveUp(id, kept) // it ended already and only waited for its device
	}
	return b.eng.Cancel(id)
}

func (b *backend) AddDevice(ctx context.Context, addr, id string) (ui.Device, error) {
	if _, p, err := net.SplitHostPort(addr); err != nil || p == "" {
		return ui.Device{}, &ui.Problem{Text: "Enter the address with its port, like 192.168.1.20:47800."}
	}
	// The device that answers is remembered with this address (looked for
	// there after a restart); a link names the device that must answer: a
	// different one there is not added.
	info, err := b.eng.AddDevice(ctx, addr, id)
	if p := unknownHostProblem(err); p != nil {
		return ui.Device{}, p
	}
	if errors.Is(err, engine.ErrThisDevice) {
		return ui.Device{}, &ui.Problem{Text: fmt.Sprintf("%s is this device's own address: enter the address that My address shows on the other device.", addr)}
	}
	if errors.Is(err, engine.ErrOtherDevice) {
		return ui.Device{}, &ui.Problem{Text: fmt.Sprintf("Another device answered at %s (%s, not %s). Check the link with the other device's owner.",
			addr, ui.ShortID(info.ID), ui.ShortID(id))}
	}
	if err != nil {
		return ui.Device{}, &ui.Problem{Text: "No Ferry device answered at that address. Check that Ferry is open and receiving on the other device, and that both are on the same network.", Err: err}
	}
	// A TLS handshake (engine.Probe) proves the ID before the device is listed.
	p, err := b.disc.AddManual(ctx, addr)
	if up := unknownHostProblem(err); up != nil {
		return ui.Device{}, up
	}
	if err != nil {
		return ui.Device{}, &ui.Problem{Text: "No Ferry device could be added at that address. Check it, and that Ferry is open and receiving on the other device.", Err: err}
	}
	return b.named(toUIDevice(p, b.trust(p.ID), true)), nil
}

// unknownHostProblem says that a name typed as a device's address does
// not exist (DNS: no such host), where "no device answered" would send the
// user to check the other device; nil for any other error.
func unknownHostProblem(err error) *ui.Problem {
	var dns *net.DNSError
	if !errors.As(err, &dns) || !dns.IsNotFound {
		return nil
	}
	return &ui.Problem{Text: fmt.Sprintf("There is no host named %s. Check the name, or enter the address that My address shows on the other device.", ui.EscapeName(dns.Name)), Err: err}
}

// intend records what this device did to a transfer.
func (b *backend) intend(id string, f func(*intent)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in := b.intents[id]
	if in == nil {
		if b.intents == nil {
			b.intents = map[string]*intent{}
		}
		in = &intent{}
		b.intents[id] = in
	}
	f(in)
}

// explain completes an event with what the engine's events do not carry
// today but this device knows: who stopped a transfer and why (from what
// the user did here) and the files of an offer that was never accepted.
// Offers and results keep
// b.intents in step: an entry lives from the offer (or the user's action)
// to the transfer's result.
func (b *backend) explain(ev *ui.TransferEvent) intent {
	switch ev.Kind {
	case ui.TransferOffer:
		if ev.Offer != nil {
			o := *ev.Offer
			b.intend(ev.ID, func(in *intent) { in.offer = &o })
		}
	case ui.TransferFile:
		if f := ev.File; f != nil && f.Verified && ev.Direction == ui.Incoming {
			b.intend(ev.ID, func(in *intent) {
				if len(in.saved) < maxHistoryPaths {
					rel := f.Path
					if f.SavedAs != "" {
						rel = f.SavedAs
					}
					in.saved = append(in.saved, rel)
				}
			})
		}
	case ui.TransferResult:
		if ev.Result == nil {
			return intent{}
		}
		b.mu.Lock()
		in := b.intents[ev.ID]
		if ev.Result.State.Final() {
			// Paused or interrupted transfers go on under the same ID.
			delete(b.intents, ev.ID)
		}
		b.mu.Unlock()
		var know intent
		if in != nil {
			know = *in
		}
		fillOutcome(ev.Result, ev.Direction, know, ev.Time, b.ctx.Err() != nil)
		return know
	}
	return intent{}
}

func (b *backend) trust(id string) trust { return trustOf(b.eng.Trusted(), id) }

func (b *backend) Settings() ui.Settings { return b.settings.get() }

// SaveSettings applies s to the engine, the advertisement and the login
// item, then stores it.
func (b *backend) SaveSettings(s ui.Settings) error {
	old := b.settings.get()
	s.DeviceName = strings.TrimSpace(s.DeviceName)
	var errs []error
	if s.DeviceName != old.DeviceName {
		err := engine.InvisibleIn(s.DeviceName)
		if err == nil {
			err = b.eng.SetName(s.DeviceName)
		}
		if err != nil {
			// The name in quotes: "It stays vm." read as a sentence cut short.
			errs = append(errs, &ui.Problem{Text: engine.Sentence(err) + ` It stays "` + old.DeviceName + `".`})
			s.DeviceName = old.DeviceName
		}
	}
	s.DownloadDir = downloadDirPath(s.DownloadDir)
	if s.DownloadDir != old.DownloadDir {
		if err := b.eng.SetDownloadDir(s.DownloadDir); err != nil {
			errs = append(errs, &ui.Problem{Text: folderProblem(s.DownloadDir, err) + " Files still go to " + old.DownloadDir + ".", Err: err})
			s.DownloadDir = old.DownloadDir
		}
	}
	b.eng.SetAccept(acceptPolicy(s.Policy), s.AutoAcceptTrusted)
	if err := b.setReceiving(s.Policy != ui.PolicyOff); err != nil {
		errs = append(errs, err)
	}
	if err := b.applyLocalSend(s); err != nil {
		errs = append(errs, err)
	}
	if err := b.applyAnywhere(s); err != nil {
		errs = append(errs, err)
	}
	// The login item is written again when "Start minimised" changes: it
	// carries --minimized only when that is checked (issue 26, finding 11).
	if s.StartAtLogin != old.StartAtLogin || s.StartAtLogin && (!autostart.Enabled() || s.StartMinimized != old.StartMinimized) {
		var err error
		if s.StartAtLogin {
			var args []string
			if s.StartMinimized {
				args = append(args, "--minimized")
			}
			err = autostart.Enable(autostart.Entry{Args: append(args, b.autostartArgs...)})
		} else {
			err = autostart.Disable()
		}
		if err != nil {
			errs = append(errs, err)
			s.StartAtLogin = old.StartAtLogin
		}
	}
	if err := b.settings.save(s); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// downloadDirPath is the folder a typed download folder means, absolute:
// "~" and "~/Pictures" are in the home folder, as in a shell, and so is a
// relative path (an app started from a menu has no working folder the user
// knows of). "~/Pictures" used to become a folder named "~" in the app's
// working folder, while the offer prompt said "Save to ~/Pictures". Saved
// absolute, the form, the prompt and History show where files really go.
// Empty stays empty (the engine refuses it); without a home folder the
// path is left as it is.
func downloadDirPath(dir string) string {
	dir = strings.TrimSpace(dir)
	home, err := os.UserHomeDir()
	if dir == "" || err != nil {
		return dir
	}
	switch {
	case dir == "~":
		return home
	case strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, "~"+string(filepath.Separator)):
		return filepath.Join(home, dir[2:])
	case !filepath.IsAbs(dir):
		return filepath.Join(home, dir)
	}
	return filepath.Clean(dir)
}

func acceptPolicy(p ui.Policy) engine.AcceptPolicy {
	if p == ui.PolicyTrusted {
		return engine.AcceptTrusted
	}
	return engine.AcceptAsk
}

// setReceiving opens the listeners and advertises them, or withdraws the
// advertisement and closes the listeners.
func (b *backend) setReceiving(on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !on {
		var errs []error
		if b.adv != nil {
			errs = append(errs, b.adv.Close())
			b.adv = nil
		}
		errs = append(errs, b.eng.StopReceiving())
		return errors.Join(errs...)
	}
	if err := b.eng.Start(b.ctx); err != nil {
		return fmt.Errorf("start receiving: %w", err)
	}
	svc := b.service()
	if b.portDir != "" && len(svc.Addrs) > 0 {
		if p := port(svc.Addrs[0].HostPort()); p > 0 {
			_ = saveLastPort(b.portDir, p) // only a hint for the next start
		}
	}
	if b.adv != nil {
		// An advertiser without a usable interface yet keeps trying by
		// itself (Err says why); that is no reason to fail a settings save.
		_ = b.adv.Update(svc)
		return nil
	}
	adv, err := discovery.Advertise(svc, b.advertiseOpts...)
	if err != nil {
		return fmt.Errorf("advertise: %w", err)
	}
	b.adv = adv
	return nil
}

func (b *backend) service() discovery.Service {
	return discovery.Service{Name: b.eng.Name(), ID: b.eng.ID(), Addrs: b.eng.Addrs()}
}

func (b *backend) History() []ui.HistoryEntry { return b.history.list() }

// ClearHistory forgets every finished transfer.
func (b *backend) ClearHistory() error { return b.history.clear() }

func (b *backend) OpenFolder(p string) error {
	if _, err := os.Stat(p); err != nil {
		return &ui.Problem{Text: fmt.Sprintf("The folder %s is no longer there.", p), Err: err}
	}
	return b.openFolder(p)
}

// OpenFile opens a file with the desktop's app for it.
func (b *backend) OpenFile(p string) error {
	if _, err := os.Stat(p); err != nil {
		return &ui.Problem{Text: fmt.Sprintf("%s is no longer there: it was moved or deleted.", p), Err: err}
	}
	return b.launch("Could not open the file", p, opener.Open)
}

// ShowInFolder shows a file in its folder, selected where the file manager can.
func (b *backend) ShowInFolder(p string) error {
	if _, err := os.Stat(p); err != nil {
		return b.OpenFolder(filepath.Dir(p))
	}
	return b.launch("Could not show the file", p, opener.Reveal)
}

// launch runs an opener on p and reports a failure it finds out about
// later (xdg-open exits once no app took the file).
func (b *backend) launch(what, p string, open func(string) (*opener.Started, error)) error {
	s, err := open(p)
	if err != nil {
		return &ui.Problem{Text: fmt.Sprintf("No app is set up to open files on this computer. The file is %s.", p), Err: err}
	}
	go func() {
		if err := s.Wait(); err != nil && b.problem != nil {
			b.problem(what, &ui.Problem{Text: fmt.Sprintf("No app could open %s.", p), Err: err})
		}
	}()
	return nil
}

// Thumbnail decodes a picture and scales it down (see thumbnail).
func (b *backend) Thumbnail(p string) image.Image { return thumbnail(p, thumbPixels) }

// Survey says what a send of paths would offer (engine.Survey).
func (b *backend) Survey(ctx context.Context, paths []string) (ui.Contents, error) {
	c, err := engine.Survey(ctx, paths)
	if err != nil {
		return ui.Contents{}, err
	}
	return ui.Contents{Files: c.Files, EmptyFolders: c.EmptyFolders, Bytes: c.Bytes, Skipped: c.Skipped.Summary()}, nil
}

// FreeSpace is the space left on dir's disk, -1 when unknown.
func (b *backend) FreeSpace(dir string) int64 {
	n, err := store.FreeSpace(dir)
	if err != nil {
		return -1
	}
	return n
}

// SelfAddresses are this device's addresses with the port it receives on,
// the ones on private networks first.
func (b *backend) SelfAddresses() []string {
	var p int
	for _, a := range b.eng.Addrs() {
		if p = port(a.HostPort()); p != 0 {
			break
		}
	}
	if p == 0 {
		return nil
	}
	return hostAddrs(p, net.Interfaces)
}

// KnownDevices lists the engine's trust store, with the user's own names.
func (b *backend) KnownDevices() []ui.KnownDevice {
	var out []ui.KnownDevice
	for _, t := range b.eng.Trusted() {
		d := ui.KnownDevice{ID: t.ID, Name: t.Name, Announced: t.Name, LastSeen: t.LastSeen, LastAddr: t.LastAddr, Addrs: lastAddrs(t),
			AutoAccept: t.AlwaysAccept, Paired: t.Paired}
		if n := b.devices.nickname(t.ID); n != "" {
			d.Name, d.Renamed = n, true
		}
		if id, err := peer.Parse(t.ID); err == nil && id.Kind == peer.LocalSend {
			d.LocalSend, d.Fingerprint = true, id.Key // known by its certificate
		}
		out = append(out, d)
	}
	return out
}

// SetAutoAccept turns accepting a device's offers without asking on or off.
func (b *backend) SetAutoAccept(id string, on bool) error { return b.eng.SetTrusted(id, on) }

// RenameDevice gives a device a name of the user's own ("" drops it).
func (b *backend) RenameDevice(id, name string) error { return b.devices.setNickname(id, name) }

// ForgetDevice removes a device from the trust store (and its name here).
func (b *backend) ForgetDevice(id string) error {
	if err := b.eng.Forget(id); err != nil {
		return err
	}
	return b.devices.setNickname(id, "")
}

// Pair starts pairing with dev without files. b.mu is held until the
// transfer is recorded as a pairing, so that pumpTransfers, which asks
// under b.mu, never sees one of its events unmarked.
func (b *backend) Pair(dev ui.Device) (string, error) {
	if len(dev.Addrs) == 0 {
		return "", &ui.Problem{Text: "Ferry does not know where this device is right now. Wait until it shows as online, or add it by address."}
	}
	to := engine.Target{Addrs: dev.Addrs, ID: dev.ID, Follow: dev.ID != ""}
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.eng.Pair(b.ctx, to)
	if err != nil {
		return "", &ui.Problem{Text: "Pairing could not start.", Err: err}
	}
	if b.pairings == nil {
		b.pairings = map[string]bool{}
	}
	b.pairings[t.ID()] = true
	b.names[t.ID()] = ui.Peer{ID: dev.ID, Name: dev.Name}
	return t.ID(), nil
}

// ConfirmPair passes the user's verdict on a verification code.
func (b *backend) ConfirmPair(id string, match bool) error { return b.eng.ConfirmPair(id, match) }

func (b *backend) OfferOnScreen(id string, shown bool) error { return b.eng.OfferOnScreen(id, shown) }

// markPairing sets ev.Pairing for the events of a pairing without files:
// started here (Pair), or a device asking (its code arrives first). A
// pairing's result ends its record.
func (b *backend) markPairing(ev *ui.TransferEvent) {
	if ev.ID == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Kind == ui.TransferPair && ev.Pair != nil && ev.Pair.Only {
		if b.pairings == nil {
			b.pairings = map[string]bool{}
		}
		b.pairings[ev.ID] = true
	}
	ev.Pairing = b.pairings[ev.ID]
	if ev.Pairing && ev.Kind == ui.TransferResult {
		delete(b.pairings, ev.ID)
	}
}

// named gives a device the user's own name for it.
func (b *backend) named(d ui.Device) ui.Device {
	if n := b.devices.nickname(d.ID); n != "" {
		d.Name = n
	}
	return d
}

// close ends the browser links, serving through the relay (and its
// retries), and withdraws the advertisement.
func (b *backend) close() {
	b.ls.close()
	b.anywhere.close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.adv != nil {
		b.adv.Close()
		b.adv = nil
	}
}

// prober lets discovery verify manual and remembered peers with a TLS
// handshake that proves the device ID.
func prober(eng *engine.Engine) discovery.Prober {
	return func(ctx context.Context, addr string) (string, string, error) {
		info, err := eng.Probe(ctx, addr)
		return info.ID, info.Name, err
	}
}

// KeptForNextStart reports whether the send of delivery id is kept for the
// app's next start (sends.go), where it goes on by itself (ui.SendKeeper).
func (b *backend) KeptForNextStart(id string) bool {
	_, ok := b.sends.get(id)
	return ok
}
