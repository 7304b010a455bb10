package app

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/ui"
)

// File names inside the config dir.
const (
	settingsFile = "settings.json"
	historyFile  = "history.json"
	devicesFile  = "devices.json"
	// maxHistory bounds the history file; the oldest entries go first.
	maxHistory = 500
	// maxHistoryText bounds the texts the history keeps in full, all
	// entries together; older texts are cut to historyTextCut bytes.
	maxHistoryText = 4 << 20
	historyTextCut = 1 << 10
	// maxHistoryPaths bounds the files one entry names for Open and Show.
	maxHistoryPaths = 20
	// busyGap is how long after an offer declined while busy a later one
	// still joins its entry (ui.HistoryEntry.Busy): a flood that goes on
	// stays one entry, one an hour later starts another.
	busyGap = 10 * time.Minute
)

// writeFileAtomic writes data to path: temp -> fsync -> rename, then fsyncs
// the directory, so a crash leaves either the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// loadJSON reads path into v; a missing file leaves v alone. A file that
// is not what it should be (damaged, or edited by hand) is set aside
// (keepAside) before anything is saved over it, and said with a
// *damagedError.
func loadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		keptAs, kerr := keepAside(path)
		return &damagedError{file: filepath.Base(path), keptAs: keptAs, keepErr: kerr, err: err}
	}
	return nil
}

// damagedError is a file of the config dir that could not be read: the
// app starts without what it held, and keeps the file aside as keptAs
// (a name in the same folder) for whoever wants to mend it.
type damagedError struct {
	file    string // "settings.json"
	keptAs  string // "settings.json.damaged"; "" when it could not be moved (keepErr)
	keepErr error
	err     error
}

func (e *damagedError) Error() string {
	if e.keptAs == "" {
		return fmt.Sprintf("%s: %v (it could not be set aside: %v)", e.file, e.err, e.keepErr)
	}
	return fmt.Sprintf("%s: %v (kept as %s)", e.file, e.err, e.keptAs)
}

func (e *damagedError) Unwrap() error { return e.err }

// keepAside renames the damaged file path to "<name>.damaged" in its
// folder, or "<name>.damaged-2" and on when that is taken (an earlier
// damaged copy is never replaced), and returns the new name.
func keepAside(path string) (string, error) { return atomicfile.SetAside(path, ".damaged", 100) }

func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// settingsStore keeps ui.Settings in <config>/settings.json.
type settingsStore struct {
	path string
	mu   sync.Mutex // guards the fields below
	s    ui.Settings
	// unknown are the file's settings that this build does not know (a
	// newer Ferry's), written back as they were: the user going back to
	// this version and forward again keeps them (docs/compatibility.md).
	unknown map[string]json.RawMessage
}

func openSettings(dir string, defaults ui.Settings) (*settingsStore, error) {
	st := &settingsStore{path: filepath.Join(dir, settingsFile), s: defaults}
	if err := loadJSON(st.path, &st.s); err != nil {
		return st, fmt.Errorf("load settings: %w", err)
	}
	st.unknown = unknownFields(st.path, st.s)
	switch st.s.Policy {
	case ui.PolicyEveryone, ui.PolicyTrusted, ui.PolicyOff:
	default:
		st.s.Policy = ui.PolicyEveryone
	}
	// Names saved before they were trimmed on save keep no stray spaces.
	st.s.DeviceName = strings.TrimSpace(st.s.DeviceName)
	if st.s.DownloadDir == "" {
		st.s.DownloadDir = defaults.DownloadDir
	}
	return st, nil
}

func (st *settingsStore) get() ui.Settings {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s
}

func (st *settingsStore) save(s ui.Settings) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := saveJSON(st.path, withFields(s, st.unknown)); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	st.s = s
	return nil
}

// unknownFields returns the fields of the JSON object in path that known,
// a struct, has no field for: what a newer Ferry wrote there. It reads
// what loadJSON read already; nil when there are none or the file cannot
// be read as an object.
func unknownFields(path string, known any) map[string]json.RawMessage {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	return unknownOf(all, reflect.TypeOf(known))
}

// unknownOf takes out of all, a JSON object's fields, those the struct
// type known has (as encoding/json matches them), and returns the rest;
// nil when none is left.
func unknownOf(all map[string]json.RawMessage, known reflect.Type) map[string]json.RawMessage {
	t := known
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			for k := range all {
				if strings.EqualFold(k, name) {
					delete(all, k)
				}
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	return all
}

// withFields is v, marshalled as a JSON object, with the fields of extra
// after its own.
func withFields(v any, extra map[string]json.RawMessage) any {
	if len(extra) == 0 {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return v
	}
	b = b[:len(b)-1]
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		name, _ := json.Marshal(k)
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, name...), ':'), extra[k]...)
	}
	return json.RawMessage(append(b, '}'))
}

// historyStore keeps finished transfers in <config>/history.json, newest first.
type historyStore struct {
	path    string
	mu      sync.Mutex // guards the fields below
	entries []ui.HistoryEntry
	// unknown are, by entry ID, the fields of the file's entries that this
	// build does not know (a newer Ferry's), written back with their
	// entries (docs/compatibility.md).
	unknown map[string]map[string]json.RawMessage
}

func openHistory(dir string) (*historyStore, error) {
	h := &historyStore{path: filepath.Join(dir, historyFile)}
	if err := loadJSON(h.path, &h.entries); err != nil {
		h.entries = nil
		return h, fmt.Errorf("load history: %w", err)
	}
	h.unknown = unknownEntryFields(h.path)
	sort.SliceStable(h.entries, func(i, j int) bool { return h.entries[i].Finished.After(h.entries[j].Finished) })
	return h, nil
}

func (h *historyStore) list() []ui.HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ui.HistoryEntry(nil), h.entries...)
}

// add records how a transfer ended and saves the file. A transfer that
// stopped for now (interrupted, paused by the sender) and later ends keeps
// one entry: the later one replaces it, on top.
//
// An offer declined while busy (Busy) joins the latest entry of such
// offers when it came within busyGap of that entry's last one: that entry
// goes on top, summing them up, so that a flood of senders refused by the
// receiver's limits leaves one entry rather than one per offer. Declines,
// failures and everything else keep an entry each.
func (h *historyStore) add(e ui.HistoryEntry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Busy > 0 {
		for _, old := range h.entries {
			if old.Busy > 0 {
				if e.Finished.Sub(old.Finished) <= busyGap {
					e = joinBusy(old, e)
				}
				break
			}
		}
	}
	if e.Busy == 0 {
		// A later end of the same transfer: what a newer Ferry said of
		// the earlier one is not said of it.
		delete(h.unknown, e.ID)
	}
	kept := make([]ui.HistoryEntry, 0, len(h.entries)+1)
	kept = append(kept, e)
	for _, old := range h.entries {
		if old.ID != e.ID {
			kept = append(kept, old)
		}
	}
	h.entries = kept
	if len(h.entries) > maxHistory {
		h.entries = h.entries[:maxHistory]
	}
	// Texts are up to 64 KiB each: keep the newest in full, cut the rest.
	total := 0
	for i := range h.entries {
		e := &h.entries[i]
		if total += len(e.Text); total > maxHistoryText && len(e.Text) > historyTextCut {
			e.Text = cutText(e.Text, historyTextCut)
		}
	}
	if err := saveJSON(h.path, h.withUnknown()); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

// withUnknown is the entries to save, each with the fields a newer Ferry
// wrote in it that this build does not know.
func (h *historyStore) withUnknown() any {
	if len(h.unknown) == 0 {
		return h.entries
	}
	out := make([]any, len(h.entries))
	for i, e := range h.entries {
		out[i] = withFields(e, h.unknown[e.ID])
	}
	return out
}

// unknownEntryFields returns, by entry ID, the fields of the entries of
// the history file at path that ui.HistoryEntry does not have.
func unknownEntryFields(path string) map[string]map[string]json.RawMessage {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var all []map[string]json.RawMessage
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	var out map[string]map[string]json.RawMessage
	for _, fields := range all {
		var id string
		if json.Unmarshal(fields["id"], &id) != nil || id == "" {
			continue
		}
		if u := unknownOf(fields, reflect.TypeFor[ui.HistoryEntry]()); u != nil {
			if out == nil {
				out = map[string]map[string]json.RawMessage{}
			}
			out[id] = u
		}
	}
	return out
}

// joinBusy sums up offers declined while busy: old's and e's, which came
// later. The sum keeps old's ID (so that it replaces old) and names no
// offer's files or delivery: it is many offers.
func joinBusy(old, e ui.HistoryEntry) ui.HistoryEntry {
	j := old
	j.Busy += e.Busy
	j.Unread += e.Unread
	j.Muted += e.Muted
	j.Files += e.Files
	j.Bytes += e.Bytes
	if j.Since.IsZero() || !e.Since.IsZero() && e.Since.Before(j.Since) {
		j.Since = e.Since
	}
	if e.Finished.After(j.Finished) {
		j.Finished = e.Finished
	}
	j.Delivery, j.Names, j.Items, j.Paths, j.Text, j.HasText = "", nil, 0, nil, "", false
	j.Transport, j.Duration = "", 0
	if j.PeerID != e.PeerID || j.PeerName != e.PeerName {
		j.PeerID, j.PeerName = "", "" // from several devices: Senders names them
	}
	j.Senders = slices.Clone(old.Senders)
	j.MoreSenders = old.MoreSenders || e.MoreSenders
	for _, s := range e.Senders {
		i := slices.IndexFunc(j.Senders, func(o ui.BusySender) bool { return o.ID == s.ID })
		switch {
		case i >= 0:
			j.Senders[i].Name = cmp.Or(s.Name, j.Senders[i].Name) // its latest name
		case len(j.Senders) < ui.MaxBusySenders:
			j.Senders = append(j.Senders, s)
		default:
			j.MoreSenders = true
		}
	}
	return j
}

// clear forgets every entry.
func (h *historyStore) clear() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries, h.unknown = nil, nil
	if err := saveJSON(h.path, []ui.HistoryEntry{}); err != nil {
		return fmt.Errorf("clear history: %w", err)
	}
	return nil
}

// cutText shortens s to at most n bytes on a rune boundary, marked with "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// deviceStore keeps the user's own names for devices in <config>/devices.json.
type deviceStore struct {
	path  string
	mu    sync.Mutex        // guards names
	names map[string]string // device ID -> the user's name for it
}

func openDevices(dir string) (*deviceStore, error) {
	d := &deviceStore{path: filepath.Join(dir, devicesFile), names: map[string]string{}}
	var saved struct {
		Names map[string]string `json:"names"`
	}
	if err := loadJSON(d.path, &saved); err != nil {
		return d, fmt.Errorf("load devices: %w", err)
	}
	for id, n := range saved.Names {
		if n = strings.TrimSpace(n); n != "" && len(n) <= 255 {
			d.names[id] = n
		}
	}
	return d, nil
}

func (d *deviceStore) nickname(id string) string {
	if d == nil || id == "" {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.names[id]
}

// setNickname names device id ("" drops the name) and saves the file.
func (d *deviceStore) setNickname(id, name string) error {
	name = strings.TrimSpace(name)
	if len(name) > 255 {
		return &ui.Problem{Text: "That name is too long: use at most 255 bytes."}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == "" {
		delete(d.names, id)
	} else {
		d.names[id] = name
	}
	if err := saveJSON(d.path, struct {
		Names map[string]string `json:"names"`
	}{d.names}); err != nil {
		return fmt.Errorf("save devices: %w", err)
	}
	return nil
}
