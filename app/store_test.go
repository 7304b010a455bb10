package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/ui"
)

func TestHistoryPersistsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	h, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	// "a" is interrupted, "b" arrives, then "a" resumes and arrives: one entry each.
	for i, e := range []struct {
		id string
		st ui.State
	}{{"a", ui.StateInterrupted}, {"b", ui.StateDone}, {"a", ui.StateDone}} {
		if err := h.add(ui.HistoryEntry{ID: e.id, PeerName: "Alice", Files: 1, State: e.st, Finished: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	h2, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := h2.list()
	if len(got) != 2 || got[0].ID != "a" || got[0].State != ui.StateDone || got[1].ID != "b" {
		t.Fatalf("reloaded history = %+v, want a (done, replacing its interruption) then b", got)
	}
	tmp, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}
}

func TestCorruptHistoryIsReportedNotFatal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, historyFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := openHistory(dir)
	if err == nil {
		t.Fatal("no error for a corrupt history file")
	}
	if h == nil || len(h.list()) != 0 {
		t.Fatal("a corrupt history must yield an empty, usable store")
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	def := ui.Settings{DeviceName: "host", DownloadDir: "/dl", Policy: ui.PolicyEveryone}
	st, err := openSettings(dir, def)
	if err != nil {
		t.Fatal(err)
	}
	if st.get() != def {
		t.Fatalf("defaults = %+v", st.get())
	}
	s := def
	s.Policy, s.DeviceName, s.StartMinimized = ui.PolicyOff, "Desk", true
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	st2, err := openSettings(dir, def)
	if err != nil || st2.get() != s {
		t.Fatalf("reloaded %+v, %v; want %+v", st2.get(), err, s)
	}
}
