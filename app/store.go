package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/ui"
)

// File names inside the config dir.
const (
	settingsFile = "settings.json"
	historyFile  = "history.json"
	// maxHistory bounds the history file; the oldest entries go first.
	maxHistory = 500
)

// writeFileAtomic writes data to path: temp -> fsync -> rename, then fsyncs
// the directory, so a crash leaves either the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// loadJSON reads path into v; a missing file leaves v alone.
func loadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

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
	mu   sync.Mutex // guards s
	s    ui.Settings
}

func openSettings(dir string, defaults ui.Settings) (*settingsStore, error) {
	st := &settingsStore{path: filepath.Join(dir, settingsFile), s: defaults}
	if err := loadJSON(st.path, &st.s); err != nil {
		return st, fmt.Errorf("load settings: %w", err)
	}
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
	if err := saveJSON(st.path, s); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	st.s = s
	return nil
}

// historyStore keeps finished transfers in <config>/history.json, newest first.
type historyStore struct {
	path    string
	mu      sync.Mutex // guards entries
	entries []ui.HistoryEntry
}

func openHistory(dir string) (*historyStore, error) {
	h := &historyStore{path: filepath.Join(dir, historyFile)}
	if err := loadJSON(h.path, &h.entries); err != nil {
		h.entries = nil
		return h, fmt.Errorf("load history: %w", err)
	}
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
func (h *historyStore) add(e ui.HistoryEntry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
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
	if err := saveJSON(h.path, h.entries); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}
