package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/internal/filelock"
)

// Peer is what the trust store remembers about a device we talked to.
type Peer struct {
	// ID is the device's peer.ID as String writes it: a Ferry device ID
	// bare (as trust.json has always held it), another kind as "kind:key".
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// LastAddrs are the addresses we last reached it at (most recent first).
	LastAddrs []string `json:"last_addrs,omitempty"`
	// AlwaysAccept: the user trusts this device and accepts its offers without asking.
	AlwaysAccept bool `json:"always_accept"`
	// Paired: the user confirmed the device's verification code (that is
	// how a device becomes trusted now); PairedAt says when.
	Paired   bool      `json:"paired,omitempty"`
	PairedAt time.Time `json:"paired_at,omitzero"`
	// Rendezvous is the secret shared with a paired device for finding it
	// beyond the LAN (hex; package engine/internal/rendezvous), agreed at
	// pairing or at the first contact after it; RendezvousAt says when.
	// Files written before issue #29 have none.
	Rendezvous   string    `json:"rendezvous,omitempty"`
	RendezvousAt time.Time `json:"rendezvous_at,omitzero"`

	// unknown holds the fields a newer Ferry wrote that this build does
	// not know, written back as they were: the user going back to this
	// version and forward again keeps them (docs/compatibility.md).
	unknown map[string]json.RawMessage
}

// peerFields are the JSON names of Peer's fields.
var peerFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Peer]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			m[name] = true
		}
	}
	return m
}()

// UnmarshalJSON reads a device, keeping the fields it does not know.
func (p *Peer) UnmarshalJSON(b []byte) error {
	type plain Peer
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k := range all {
		if peerFields[strings.ToLower(k)] {
			delete(all, k)
		}
	}
	*p = Peer(q)
	if len(all) > 0 {
		p.unknown = all
	}
	return nil
}

// MarshalJSON writes a device, the fields it did not know after its own.
func (p Peer) MarshalJSON() ([]byte, error) {
	type plain Peer
	b, err := json.Marshal(plain(p))
	if err != nil || len(p.unknown) == 0 {
		return b, err
	}
	b = b[:len(b)-1] // its closing brace
	for _, k := range slices.Sorted(maps.Keys(p.unknown)) {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b = append(append(append(append(b, ','), name...), ':'), p.unknown[k]...)
	}
	return append(b, '}'), nil
}

// KeyChangedError reports a known device (by address) that now presents a different key.
type KeyChangedError struct {
	Addr      string
	Known     Peer
	Presented peer.ID
}

func (e *KeyChangedError) Error() string {
	return fmt.Sprintf("the device at %s used to be %q (%s) but now presents a different key (%s); if that is expected, send again with its new ID or forget the old device",
		e.Addr, e.Known.Name, shortOf(e.Known.ID), e.Presented.Short())
}

// MismatchError reports a peer that is not the device the user asked for.
type MismatchError struct {
	Expected, Presented peer.ID
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the peer is not the expected device: expected %s, it presented %s", e.Expected.Human(), e.Presented.Human())
}

func shortOf(id string) string { return deviceid.Short(id) }

const (
	trustFile     = "trust.json"
	lockSuffix    = ".lock" // trust.json.lock: held while the file is read for a change, or written
	maxTrustPeers = 10000
	// maxTrustFile bounds trust.json as read: maxTrustPeers devices take
	// a few MB; a larger file is damaged, not read whole into memory.
	maxTrustFile = 32 << 20
	maxAddrs     = 4
)

// ErrNotProven is returned when asked to remember a peer that proved no
// key (peer.Anon): such a peer is never trusted.
var ErrNotProven = errors.New("this device proved no key, so it cannot be trusted or remembered")

// Store pins peers by ID (package peer: a Ferry device ID, a LocalSend
// fingerprint; the kinds never collide). A peer that proved no key is never
// in it. It is safe for concurrent use.
//
// Several processes may hold one config folder at once (the app, a
// ferry-cli receive, ferry-cli devices --forget): the file is the truth and
// a Store's memory a copy of it. A Store keeps the changes it made and did
// not write yet, and a write replays them onto the file as it is then
// (under a lock on trust.json.lock), so a device another process forgot or
// paired meanwhile stays so rather than being overwritten by this one's
// older copy; reads pick up another process's writes (Get, List...).
type Store struct {
	path   string
	now    func() time.Time // dates what it records
	log    *slog.Logger     // says what it did to a file it could read only in part
	saveMu sync.Mutex       // serialises re-reads and writes of the file within the process
	mu     sync.Mutex       // guards the fields below
	byID   map[string]*Peer // the file as last read or written, with pending applied
	// foreign are the file's devices of a kind this build does not know
	// (a newer Ferry's), kept as they were and written back.
	foreign []json.RawMessage
	// pending are the changes made since the file was last read or
	// written, oldest first.
	pending []change
	// stamp is the file as last read or written (nil: there was none).
	stamp os.FileInfo

	// every is how often Seen writes the file at most (seenSaveEvery).
	every   time.Duration
	flushMu sync.Mutex  // serialises flushDirty
	laterMu sync.Mutex  // guards the fields below
	dirty   bool        // Seen recorded contacts not written yet
	saved   time.Time   // when Seen's contacts were last written
	later   *time.Timer // a write Seen scheduled, nil when none is due
	saves   int         // writes of the file (tests)
	lastErr error       // the last write's failure, for Flush
}

// seenSaveEvery bounds how often contacts recorded by Seen are written:
// a flood of accepted offers from fresh identities (issue #27: 10,000 of
// them rewrote a 1.1 MB file each, 44.7 s of CPU) costs one write per
// period. The first contact after a quiet period is written at once; a
// decision of the user's (SetAlwaysAccept, Pair, Forget) always is.
const seenSaveEvery = time.Second

// DamagedError is a trust store that could not be read as one: it is not
// used (nor replaced), and the devices it knew are not forgotten silently.
// Whoever moves it away starts with no known devices.
type DamagedError struct {
	Path string // the trust store's file
	Err  error  // why it could not be read
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("trust store %s is damaged (%v): move it away to start with no known devices", e.Path, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// OpenStore loads the trust store from dir (an absent file is an empty store).
// A corrupt file is an error: we never silently forget whom we trusted.
func OpenStore(dir string) (*Store, error) { return OpenStoreWith(dir, time.Now, nil) }

// OpenStoreWith is OpenStore with the clock that dates what the store
// records (first and last seen, paired at), nil meaning time.Now, and the
// logger told what the store did to a file it read only in part (a device
// listed twice), nil meaning slog.Default.
func OpenStoreWith(dir string, now func() time.Time, log *slog.Logger) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Store{path: filepath.Join(dir, trustFile), now: now, log: log, every: seenSaveEvery}
	byID, foreign, st, err := s.read()
	if err != nil {
		return nil, err
	}
	s.byID, s.foreign, s.stamp = byID, foreign, st
	return s, nil
}

// read reads the file: its devices, those of a kind this build does not
// know (foreign, kept as they were), and its stamp (nil when there is
// none, which is an empty store).
func (s *Store) read() (byID map[string]*Peer, foreign []json.RawMessage, st os.FileInfo, err error) {
	byID = map[string]*Peer{}
	data, st, err := atomicfile.Read(s.path, maxTrustFile) // st: of what is read, whatever replaces the file meanwhile
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return byID, nil, nil, nil
	case errors.Is(err, atomicfile.ErrTooLarge), errors.Is(err, atomicfile.ErrNotRegular):
		return nil, nil, st, &DamagedError{Path: s.path, Err: err}
	case err != nil:
		return nil, nil, nil, fmt.Errorf("trust store: %w", err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, nil, st, &DamagedError{Path: s.path, Err: err}
	}
	at := map[string]int{} // a device's entry in the file, from 1
	for i, e := range entries {
		var p Peer
		if err := json.Unmarshal(e, &p); err != nil {
			return nil, nil, st, &DamagedError{Path: s.path, Err: err}
		}
		id, err := peer.Parse(p.ID)
		if err != nil {
			if kind, _, ok := strings.Cut(p.ID, ":"); ok && !peer.Kind(strings.ToLower(kind)).Known() {
				foreign = append(foreign, e)
			} else {
				s.log.Warn("trust store: an entry that names no device is left out", "file", s.path, "entry", i+1,
					"paired", p.Paired, "always_accept", p.AlwaysAccept, "err", err)
			}
			continue
		}
		if !id.Proven() {
			continue
		}
		p.ID = id.String()
		if was, twice := byID[p.ID]; twice {
			// Only a hand-edited file lists a device twice (in two
			// spellings of its ID, say): the user granted what either
			// entry holds, so both are kept in one.
			dropped := merge(was, &p)
			s.log.Warn("trust store: a device is listed twice; its entries were merged, keeping the trust either granted",
				"file", s.path, "device", id.Short(), "entries", fmt.Sprintf("%d and %d", at[p.ID], i+1),
				"paired", was.Paired, "always_accept", was.AlwaysAccept, "dropped", strings.Join(dropped, "; "))
			continue
		}
		at[p.ID] = i + 1
		byID[p.ID] = &p
	}
	return byID, foreign, st, nil
}

// merge folds q, another entry of the file for p's device, into p. The
// device keeps the trust either entry granted (always accept, paired at
// the earliest pairing), the first and last contact of both, the name, the
// addresses and the fields a newer Ferry wrote of the entry seen last (the
// other's after them), and the rendezvous secret agreed last. It returns
// what was not kept, as the log says it (a secret by its date only).
func merge(p, q *Peer) (dropped []string) {
	newer, older := p, q
	if q.LastSeen.After(p.LastSeen) {
		newer, older = q, p
	}
	m := clonePeer(newer)
	m.unknown = maps.Clone(newer.unknown)
	if m.Name == "" {
		m.Name = older.Name
	} else if older.Name != "" && older.Name != m.Name {
		dropped = append(dropped, fmt.Sprintf("the name %q", older.Name))
	}
	if !older.FirstSeen.IsZero() && (m.FirstSeen.IsZero() || older.FirstSeen.Before(m.FirstSeen)) {
		m.FirstSeen = older.FirstSeen
	}
	for _, a := range older.LastAddrs {
		switch {
		case slices.Contains(m.LastAddrs, a):
		case len(m.LastAddrs) < maxAddrs:
			m.LastAddrs = append(m.LastAddrs, a)
		default:
			dropped = append(dropped, "the address "+a)
		}
	}
	m.AlwaysAccept = p.AlwaysAccept || q.AlwaysAccept
	if older.Paired {
		if !m.Paired || (!older.PairedAt.IsZero() && (m.PairedAt.IsZero() || older.PairedAt.Before(m.PairedAt))) {
			m.PairedAt = older.PairedAt
		}
		m.Paired = true
	}
	if older.Rendezvous != "" && older.Rendezvous != m.Rendezvous {
		gone := older
		if m.Rendezvous == "" || older.RendezvousAt.After(m.RendezvousAt) {
			gone = &Peer{Rendezvous: m.Rendezvous, RendezvousAt: m.RendezvousAt}
			m.Rendezvous, m.RendezvousAt = older.Rendezvous, older.RendezvousAt
		}
		if gone.Rendezvous != "" {
			dropped = append(dropped, "the rendezvous secret agreed "+gone.RendezvousAt.Format(time.RFC3339))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(older.unknown)) {
		v, ok := m.unknown[k]
		switch {
		case !ok:
			if m.unknown == nil {
				m.unknown = map[string]json.RawMessage{}
			}
			m.unknown[k] = older.unknown[k]
		case string(v) != string(older.unknown[k]):
			dropped = append(dropped, fmt.Sprintf("the field %q of the entry seen earlier", k))
		}
	}
	*p = m
	return dropped
}

// refresh takes in what another process wrote to the file since this
// Store last read or wrote it. The check is one stat; an unreadable or
// damaged file leaves what the Store holds (its next write replaces it, as
// it always did).
func (s *Store) refresh() {
	st, err := os.Stat(s.path)
	s.mu.Lock()
	same := sameStamp(s.stamp, st, err)
	s.mu.Unlock()
	if same {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	unlock, err := filelock.Lock(s.path + lockSuffix)
	if err != nil {
		return
	}
	defer unlock()
	byID, foreign, st, err := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if st != nil {
			s.stamp = st // read once, not at every Get
		}
		return
	}
	for _, c := range s.pending {
		c.apply(byID)
	}
	s.byID, s.foreign, s.stamp = byID, foreign, st
}

// sameStamp reports whether the file stat found (st, or err) is the one a
// Store last read or wrote (was; nil: none). A file that cannot be
// stat'ed counts as unchanged.
func sameStamp(was, st os.FileInfo, err error) bool {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return was == nil
	case err != nil:
		return true
	}
	return was != nil && os.SameFile(was, st) && was.ModTime().Equal(st.ModTime()) && was.Size() == st.Size()
}

// change is one change a Store made to its devices, kept until it is
// written so that it can be replayed onto the file as another process left
// it.
type change struct {
	kind   changeKind
	id     string
	name   string
	addr   string
	at     time.Time
	on     bool   // changeAccept
	secret string // changeRendezvous
}

type changeKind int

const (
	changeSeen changeKind = iota
	changeAccept
	changePair
	changeRendezvous
	changeForget
)

// apply makes the change in byID.
func (c change) apply(byID map[string]*Peer) {
	p, ok := byID[c.id]
	switch c.kind {
	case changeForget:
		delete(byID, c.id)
		return
	case changeRendezvous:
		if ok && p.Paired { // a device forgotten meanwhile keeps no secret
			p.Rendezvous, p.RendezvousAt = c.secret, c.at
		}
		return
	}
	if !ok {
		p = &Peer{ID: c.id, FirstSeen: c.at}
		if c.kind == changeAccept {
			p.Name, p.LastSeen = c.name, c.at
		}
		byID[c.id] = p
	}
	switch c.kind {
	case changeSeen, changePair:
		if c.name != "" {
			p.Name = c.name
		}
		p.LastSeen = c.at
		if c.addr != "" {
			p.LastAddrs = slices.DeleteFunc(p.LastAddrs, func(a string) bool { return a == c.addr })
			p.LastAddrs = append([]string{c.addr}, p.LastAddrs...)
			p.LastAddrs = p.LastAddrs[:min(len(p.LastAddrs), maxAddrs)]
		}
		if c.kind == changePair {
			p.AlwaysAccept, p.Paired, p.PairedAt = true, true, c.at
		}
	case changeAccept:
		p.AlwaysAccept = c.on
	}
	evict(byID)
}

// record makes the change in memory, to be written by the next save.
func (s *Store) record(c change) {
	s.mu.Lock()
	c.apply(s.byID)
	s.pending = append(s.pending, c)
	s.mu.Unlock()
}

// Get returns the record for id.
func (s *Store) Get(id peer.ID) (Peer, bool) {
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.byID[id.String()]
	if !ok {
		return Peer{}, false
	}
	return clonePeer(p), true
}

func clonePeer(p *Peer) Peer {
	c := *p
	c.LastAddrs = slices.Clone(p.LastAddrs)
	return c
}

// CheckAddr refuses a key that differs from the one last seen at addr, unless
// the presented key is itself known (devices can swap addresses). Only
// devices of the presented key's kind count: one port of a host may speak
// Ferry and another LocalSend.
func (s *Store) CheckAddr(addr string, presented peer.ID) error {
	if addr == "" {
		return nil
	}
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[presented.String()]; ok {
		return nil
	}
	var latest *Peer
	for _, p := range s.byID {
		if len(p.LastAddrs) > 0 && p.LastAddrs[0] == addr && (latest == nil || p.LastSeen.After(latest.LastSeen)) &&
			kindOf(p.ID) == presented.Kind {
			latest = p
		}
	}
	if latest != nil {
		return &KeyChangedError{Addr: addr, Known: clonePeer(latest), Presented: presented}
	}
	return nil
}

// kindOf is the kind of a stored ID (the store holds only IDs that parse).
func kindOf(stored string) peer.Kind {
	id, _ := peer.Parse(stored)
	return id.Kind
}

// Seen records contact with a device (trust on first use) and saves the
// store: at once after a quiet period, else within a second, together
// with the other contacts of that second (Flush writes what is due).
func (s *Store) Seen(id peer.ID, name, addr string) error {
	if !id.Proven() {
		return fmt.Errorf("trust store: %w", ErrNotProven)
	}
	s.record(change{kind: changeSeen, id: id.String(), name: name, addr: addr, at: s.now()})
	return s.saveSoon()
}

// saveSoon writes the store now if Seen wrote nothing for a period, and
// otherwise schedules one write at the end of that period for every
// contact until then.
func (s *Store) saveSoon() error {
	s.laterMu.Lock()
	s.dirty = true
	if s.later != nil {
		s.laterMu.Unlock()
		return nil // the write due includes this contact
	}
	if wait := s.every - time.Since(s.saved); wait > 0 {
		s.later = time.AfterFunc(wait, func() { s.flushDirty() })
		s.laterMu.Unlock()
		return nil
	}
	s.laterMu.Unlock()
	return s.flushDirty()
}

// flushDirty writes the store if Seen recorded something not written yet.
func (s *Store) flushDirty() error {
	s.flushMu.Lock() // a Flush waits for a scheduled write under way
	defer s.flushMu.Unlock()
	s.laterMu.Lock()
	if s.later != nil {
		s.later.Stop()
		s.later = nil
	}
	if !s.dirty {
		err := s.lastErr
		s.laterMu.Unlock()
		return err
	}
	s.dirty = false
	s.saved = time.Now()
	s.laterMu.Unlock()
	err := s.save()
	s.laterMu.Lock()
	s.lastErr = err
	s.laterMu.Unlock()
	return err
}

// Flush writes the contacts Seen recorded and did not write yet; call it
// before the process ends.
func (s *Store) Flush() error { return s.flushDirty() }

// SetAlwaysAccept marks a device as trusted for automatic acceptance.
func (s *Store) SetAlwaysAccept(id peer.ID, name string, on bool) error {
	if !id.Proven() {
		return fmt.Errorf("trust store: %w", ErrNotProven)
	}
	s.record(change{kind: changeAccept, id: id.String(), name: name, on: on, at: s.now()})
	return s.save()
}

// Pair records that the user confirmed the device's verification code:
// the device is trusted from now on.
func (s *Store) Pair(id peer.ID, name, addr string, at time.Time) error {
	if !id.Proven() {
		return fmt.Errorf("trust store: %w", ErrNotProven)
	}
	s.record(change{kind: changePair, id: id.String(), name: name, addr: addr, at: at})
	return s.save()
}

// ErrNotPaired is returned when asked to keep a rendezvous secret for a
// device the user did not pair with.
var ErrNotPaired = errors.New("this device is not paired")

// SetRendezvous keeps the rendezvous secret (hex) shared with a paired
// device, replacing the one before. Only a paired device has one.
func (s *Store) SetRendezvous(id peer.ID, secret string, at time.Time) error {
	if p, ok := s.Get(id); !ok || !p.Paired {
		return fmt.Errorf("trust store: rendezvous secret for %s: %w", id.Short(), ErrNotPaired)
	}
	s.record(change{kind: changeRendezvous, id: id.String(), secret: secret, at: at})
	return s.save()
}

// PairedNamed returns a paired device called name, other than id: another
// key that claims the name of a device the user paired with.
func (s *Store) PairedNamed(name string, id peer.ID) (Peer, bool) {
	if name == "" {
		return Peer{}, false
	}
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.byID {
		if p.Paired && p.Name == name && p.ID != id.String() {
			return clonePeer(p), true
		}
	}
	return Peer{}, false
}

// Forget removes a device, also from other processes that hold the
// store (they take it in at their next read or write).
func (s *Store) Forget(id peer.ID) error {
	s.record(change{kind: changeForget, id: id.String()})
	return s.save()
}

// List returns all known devices, most recently seen first.
func (s *Store) List() []Peer {
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	return sorted(s.byID)
}

// sorted copies the devices of byID, most recently seen first.
func sorted(byID map[string]*Peer) []Peer {
	out := make([]Peer, 0, len(byID))
	for _, p := range byID {
		out = append(out, clonePeer(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out
}

// evict keeps a store bounded by dropping the least recently seen device
// that the user did not mark as trusted.
func evict(byID map[string]*Peer) {
	for len(byID) > maxTrustPeers {
		var oldest *Peer
		for _, p := range byID {
			if !p.AlwaysAccept && (oldest == nil || p.LastSeen.Before(oldest.LastSeen)) {
				oldest = p
			}
		}
		if oldest == nil {
			return
		}
		delete(byID, oldest.ID)
	}
}

// save writes the changes not written yet onto the file as it is now (what
// other processes wrote kept), and takes the result in. A file damaged
// meanwhile is replaced by what this Store holds, as before there were
// several processes.
func (s *Store) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	unlock, err := filelock.Lock(s.path + lockSuffix)
	if err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	defer unlock()
	byID, foreign, _, rerr := s.read()
	s.mu.Lock()
	changes := s.pending
	s.pending = nil
	if rerr != nil {
		foreign = s.foreign
		byID = make(map[string]*Peer, len(s.byID))
		for id, p := range s.byID {
			c := clonePeer(p)
			byID[id] = &c
		}
	}
	s.mu.Unlock()
	if rerr == nil {
		for _, c := range changes {
			c.apply(byID)
		}
	}
	err = s.write(byID, foreign)
	var st os.FileInfo
	if err == nil {
		st, err = os.Stat(s.path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.pending = append(changes, s.pending...) // for the next write
		return fmt.Errorf("trust store: %w", err)
	}
	for _, c := range s.pending { // made while this was written
		c.apply(byID)
	}
	s.byID, s.foreign, s.stamp = byID, foreign, st
	return nil
}

// write replaces the file with byID, and foreign after them.
func (s *Store) write(byID map[string]*Peer, foreign []json.RawMessage) error {
	entries := make([]any, 0, len(byID)+len(foreign))
	for _, p := range sorted(byID) {
		entries = append(entries, p)
	}
	for _, e := range foreign {
		entries = append(entries, e)
	}
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, data, 0o600); err != nil {
		return err
	}
	s.laterMu.Lock()
	s.saves++
	s.laterMu.Unlock()
	return nil
}
