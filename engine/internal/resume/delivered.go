package resume

import (
	"cmp"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// A finished delivery is not forgotten at once. Its sender may not have
// heard the end (killed, or its connection lost, right after the receiver
// said every file was saved); run again, it offers the same delivery
// (Dir.HoldDelivery), and the receiver finds here what it saved then
// (Dir.Delivered): the files still there, unchanged, count as saved, and
// nothing is saved twice as "name (1)". A record is the finished
// transfer's state itself (its snapshot and journal, which list every
// saved file), moved into <dir>/delivered/ as it finished: that costs two
// renames, whatever the number of files. It is kept for DeliveredFor (its
// snapshot's modification time is when it was kept), at most
// deliveredPerPeer of one device and deliveredAll in all, within
// deliveredBytes.
const (
	DeliveredFor     = 24 * time.Hour
	deliveredPerPeer = 16
	deliveredAll     = 256
	deliveredBytes   = 64 << 20
)

func (d *Dir) deliveredDir() *Dir {
	return &Dir{path: filepath.Join(d.path, "delivered"), log: d.log, now: d.now}
}

// Deliver keeps key's state, that of a transfer whose accepted files were
// all saved (its journal closed and synced), as its delivered record, and
// prunes the records beyond the bounds. The state goes from the states
// even when it cannot be kept: a delivery that is done resumes nothing.
func (d *Dir) Deliver(key string) error {
	dd := d.deliveredDir()
	err := os.MkdirAll(dd.path, 0o700)
	if err == nil {
		// The journal first: a record is its snapshot, and a snapshot
		// without its journal (moved alone) would list only the files
		// saved before this session.
		dd.drop(key) // an earlier record of the same files from the same device
		if err = os.Rename(d.journalPath(key), dd.journalPath(key)); err == nil || errors.Is(err, fs.ErrNotExist) {
			err = os.Rename(d.snapshotPath(key), dd.snapshotPath(key))
		}
		if err == nil {
			now := d.now()
			err = os.Chtimes(dd.snapshotPath(key), now, now)
		}
	}
	if err != nil {
		dd.drop(key)
	}
	d.Drop(key)
	d.PruneDelivered()
	return err
}

// Delivered returns key's delivered record when it is of delivery, kept
// no longer than DeliveredFor ago, and readable whole; else nil. Its files
// are the saved ones it lists: the caller checks it against the offer
// (State.Check), which binds it to the peer and the files, and each file
// on disk before it counts one as saved.
func (d *Dir) Delivered(key, delivery string) *State {
	if delivery == "" {
		return nil
	}
	dd := d.deliveredDir()
	st, err := os.Stat(dd.snapshotPath(key))
	if err != nil {
		return nil
	}
	if age := d.now().Sub(st.ModTime()); age < -time.Minute || age > DeliveredFor {
		return nil
	}
	s, err := dd.Load(key)
	if err != nil || s == nil || s.Delivery != delivery || s.Unremoved {
		return nil
	}
	s.Files = slices.DeleteFunc(s.Files, func(f File) bool { return !f.Done })
	return s
}

// PruneDelivered removes the delivered records past their age, and the
// oldest beyond deliveredPerPeer of one device, deliveredAll in all or
// deliveredBytes together (the newest is kept whatever its size); and
// what in their folder is not one (a journal whose snapshot did not
// follow, a temporary file), once an hour old.
func (d *Dir) PruneDelivered() {
	dd := d.deliveredDir()
	entries, err := os.ReadDir(dd.path)
	if err != nil {
		return
	}
	type rec struct {
		key, peer string
		kept      time.Time
		size      int64
	}
	var recs []rec
	snapshots := map[string]bool{}
	for _, de := range entries {
		if key, ok := strings.CutSuffix(de.Name(), ".json"); ok && !strings.HasPrefix(key, ".") {
			snapshots[key] = true
		}
	}
	for _, de := range entries {
		info, ierr := de.Info()
		if ierr != nil || info.IsDir() {
			continue
		}
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || strings.HasPrefix(key, ".") {
			if k, log := strings.CutSuffix(de.Name(), ".log"); (!log || !snapshots[k]) && d.now().Sub(info.ModTime()) > time.Hour {
				os.Remove(filepath.Join(dd.path, de.Name()))
			}
			continue
		}
		h, herr := dd.readHead(key)
		if herr != nil || h == nil {
			dd.drop(key)
			continue
		}
		size := info.Size()
		if jst, err := os.Stat(dd.journalPath(key)); err == nil {
			size += jst.Size()
		}
		recs = append(recs, rec{key, h.Peer, info.ModTime(), size})
	}
	slices.SortFunc(recs, func(a, b rec) int { return cmp.Or(b.kept.Compare(a.kept), strings.Compare(a.key, b.key)) })
	perPeer := map[string]int{}
	var kept int
	var bytes int64
	for _, r := range recs {
		age := d.now().Sub(r.kept)
		perPeer[r.peer]++
		if age > DeliveredFor || perPeer[r.peer] > deliveredPerPeer || kept >= deliveredAll || kept > 0 && bytes+r.size > deliveredBytes {
			dd.drop(r.key)
			continue
		}
		kept++
		bytes += r.size
	}
}

// drop removes key's record (d being the records' folder).
func (d *Dir) drop(key string) {
	for _, p := range []string{d.snapshotPath(key), d.journalPath(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("remove delivered record", "err", err)
		}
	}
}

// The sending side: the delivery a send offered, kept while it may still
// have to be offered again (HoldDelivery).

// DeliveryKey names what a sender keeps of the delivery of the files
// manifest to the device (or, without one, the addresses) target.
func DeliveryKey(manifest, target string) string { return Key(target, manifest) }

func (d *Dir) deliveryPath(key string) string {
	return filepath.Join(d.path, "send-"+key+".delivery")
}

// maxDeliveries bounds the deliveries a sender keeps; the oldest go first.
const maxDeliveries = 64

// Delivery returns the delivery ID kept under key (HoldDelivery): the
// delivery that a send of the same files to the same device offered and
// did not hear the end of. "" when there is none, when it is not an ID,
// or when a send in another process holds it now (where files are locked).
func (d *Dir) Delivery(key string) string {
	p := d.deliveryPath(key)
	b, err := os.ReadFile(p)
	if err != nil || Locked(p) {
		return ""
	}
	return parseDeliveryID(b)
}

// parseDeliveryID reads a delivery file: an ID of hex digits, 16 to 64 of
// them, and a line end. Anything else is no ID.
func parseDeliveryID(b []byte) string {
	id, ok := strings.CutSuffix(string(b), "\n")
	if !ok || len(id) < 16 || len(id) > 64 || id != strings.ToLower(id) {
		return ""
	}
	if _, err := hex.DecodeString(id); err != nil {
		return ""
	}
	return id
}

// HeldDelivery is the delivery a running send offers, kept on disk (and,
// where files are locked, locked) until the send ends.
type HeldDelivery struct {
	path, id string
	f        *os.File
}

// HoldDelivery keeps id as key's delivery, before it is offered: a send
// killed before it heard the receiver's last word leaves it, and the same
// send run again offers it again. It prunes the oldest beyond
// maxDeliveries. A nil *HeldDelivery (the file could not be written) is
// valid and keeps nothing.
func (d *Dir) HoldDelivery(key, id string) *HeldDelivery {
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return nil
	}
	p := d.deliveryPath(key)
	if err := atomicfile.Write(p, []byte(id+"\n"), 0o600); err != nil {
		d.log.Warn("keep the delivery", "err", err)
		return nil
	}
	h := &HeldDelivery{path: p, id: id}
	if Locking { // elsewhere an open file would only keep others from replacing it
		if f, err := os.Open(p); err == nil {
			Lock(f)
			h.f = f
		}
	}
	d.pruneDeliveries()
	return h
}

// Heard forgets the delivery: its sender heard the receiver's last word
// (every file saved, or the offer refused), so the same files sent again
// are a new delivery. Only a file that still holds this delivery goes.
func (h *HeldDelivery) Heard() {
	if h == nil {
		return
	}
	if b, err := os.ReadFile(h.path); err == nil && parseDeliveryID(b) == h.id {
		h.Release() // before its file goes (Windows removes no open file)
		os.Remove(h.path)
	}
}

// Release lets go of the delivery as its send ends (it stays on disk
// unless Heard removed it).
func (h *HeldDelivery) Release() {
	if h != nil && h.f != nil {
		h.f.Close()
		h.f = nil
	}
}

func (d *Dir) pruneDeliveries() {
	entries, _ := os.ReadDir(d.path)
	type del struct {
		path string
		mod  time.Time
	}
	var ds []del
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), "send-") && strings.HasSuffix(de.Name(), ".delivery") {
			if info, err := de.Info(); err == nil {
				ds = append(ds, del{filepath.Join(d.path, de.Name()), info.ModTime()})
			}
		}
	}
	if len(ds) <= maxDeliveries {
		return
	}
	slices.SortFunc(ds, func(a, b del) int { return b.mod.Compare(a.mod) })
	for _, x := range ds[maxDeliveries:] {
		if !Locked(x.path) {
			os.Remove(x.path)
		}
	}
}
