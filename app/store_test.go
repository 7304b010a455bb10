package app

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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

// TestSettingsKeepWhatANewerFerryWrote: settings.json as a newer Ferry
// wrote it, with settings this build does not know (the user went back to
// this version), keeps them when this build saves its own, so that going
// forward again loses nothing. The app of 2026-12-02, which knew none of
// the LocalSend and relay settings, dropped them at its first save
// (LocalSend turned off came back on, its PIN and the relay's address and
// secret were gone); this build dropped window_width and window_height
// the same way (docs/compatibility.md).
func TestSettingsKeepWhatANewerFerryWrote(t *testing.T) {
	dir := t.TempDir()
	newer := `{"device_name": "Desk", "download_dir": "/dl", "policy": "everyone",
	  "future_theme": "sepia", "future_limits": {"upload_mbps": 40}, "Device_Name": "shadow"}`
	if err := os.WriteFile(filepath.Join(dir, settingsFile), []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openSettings(dir, ui.Settings{DownloadDir: "/default"})
	if err != nil {
		t.Fatal(err)
	}
	s := st.get()
	s.DeviceName = "Laptop"
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, settingsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("saved %s: %v", b, err)
	}
	if got["device_name"] != "Laptop" || got["future_theme"] != "sepia" || got["Device_Name"] != nil {
		t.Errorf("saved %s", b)
	}
	if l, _ := got["future_limits"].(map[string]any); l["upload_mbps"] != 40.0 {
		t.Errorf("future_limits saved as %v", got["future_limits"])
	}
	again, err := openSettings(dir, ui.Settings{})
	if err != nil || again.get() != s {
		t.Fatalf("reloaded %+v, %v; want %+v", again.get(), err, s)
	}
}

// TestHistoryKeepsWhatANewerFerryWrote: history.json as a newer Ferry
// wrote it keeps, through this build's next entries, what that Ferry wrote
// in its entries and this build does not know (the app of 2026-12-04
// dropped the summed-up entry of offers declined while busy, its busy,
// unread and muted counts and its senders, so: read in its code). A later end of the same
// transfer replaces its entry, and what was said of the earlier one goes
// with it.
func TestHistoryKeepsWhatANewerFerryWrote(t *testing.T) {
	dir := t.TempDir()
	newer := `[{"id": "t1", "direction": 1, "peer_name": "Bee", "state": "interrupted", "finished": "2026-12-05T10:00:00Z",
	  "files": 2, "future_rating": 5, "future_thumbs": ["a.jpg"]},
	 {"id": "t0", "direction": 0, "peer_name": "Ay", "state": "done", "finished": "2026-12-05T09:00:00Z", "future_rating": 1}]`
	if err := os.WriteFile(filepath.Join(dir, historyFile), []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	saved := func() map[string]map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, historyFile))
		if err != nil {
			t.Fatal(err)
		}
		var l []map[string]any
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("saved %s: %v", b, err)
		}
		m := map[string]map[string]any{}
		for _, e := range l {
			m[e["id"].(string)] = e
		}
		return m
	}
	if err := h.add(ui.HistoryEntry{ID: "t2", PeerName: "Cy", State: ui.StateDone, Finished: time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	got := saved()
	if len(got) != 3 || got["t1"]["future_rating"] != 5.0 || got["t1"]["files"] != 2.0 || got["t0"]["future_rating"] != 1.0 || got["t2"]["future_rating"] != nil {
		t.Fatalf("saved %v", got)
	}
	if th, _ := got["t1"]["future_thumbs"].([]any); len(th) != 1 || th[0] != "a.jpg" {
		t.Errorf("t1's future_thumbs saved as %v", got["t1"]["future_thumbs"])
	}
	if err := h.add(ui.HistoryEntry{ID: "t1", PeerName: "Bee", State: ui.StateDone, Files: 2, Finished: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	if got := saved(); len(got) != 3 || got["t1"]["future_rating"] != nil || got["t0"]["future_rating"] != 1.0 {
		t.Errorf("after t1 ended: %v", got)
	}
}

// TestDamagedFilesAreKeptAsideAndSaid: a settings, history or device-names
// file that cannot be read does not stop the app, and is not lost: it is
// renamed aside (never over an earlier damaged copy) before anything is
// saved over it, and the user is told in words what Ferry did instead and
// where the file is. Before, the app logged a warning nobody reads and the
// next save replaced the file.
func TestDamagedFilesAreKeptAsideAndSaid(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(settingsFile, `{"device_name": "x", broken`)
	write(settingsFile+".damaged", "an earlier damaged copy")
	write(historyFile, "\x00\x01garbage")
	write(devicesFile, `{"names": 7}`)
	write(sendsFile, `[{"delivery": "0123456789abcdef01234567", "peer_id": "AB`) // cut short
	settings, history, names, sends, err := openStores(dir, slog.New(slog.DiscardHandler))
	if settings == nil || history == nil || names == nil || sends == nil {
		t.Fatal("a store is missing")
	}
	var texts []string
	for _, e := range joinedErrs(err) {
		var p *ui.Problem
		if !errors.As(e, &p) {
			t.Fatalf("not said in words: %v", e)
		}
		texts = append(texts, p.Text)
	}
	want := []string{
		"Your settings could not be read, so Ferry started with the default ones. The file was kept as settings.json.damaged-2 in " + dir + ".",
		"The history of transfers could not be read, so it starts empty. The file was kept as history.json.damaged in " + dir + ".",
		"The names you gave devices could not be read, so devices show the names they announce. The file was kept as devices.json.damaged in " + dir + ".",
		"The sends that were under way when Ferry closed could not be read, so they do not go on by themselves: send those files again. The file was kept as sends.json.damaged in " + dir + ".",
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("said:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	// Saving now writes new files and touches none of the kept ones.
	if err := settings.save(settings.get()); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		settingsFile + ".damaged":   "an earlier damaged copy",
		settingsFile + ".damaged-2": `{"device_name": "x", broken`,
		historyFile + ".damaged":    "\x00\x01garbage",
		devicesFile + ".damaged":    `{"names": 7}`,
		sendsFile + ".damaged":      `[{"delivery": "0123456789abcdef01234567", "peer_id": "AB`,
	} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != data {
			t.Errorf("%s: %q, %v; want %q", name, b, err, data)
		}
	}
	// Files that read well are left where they are, and nothing is said.
	if _, _, _, _, err := openStores(dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("the new files: %v", err)
	}
}

// TestDamagedTrustStoreStartsTheAppKnowingNoDevice: the engine will not
// forget whom it trusted on its own (the CLI stops and says so); the app,
// which people start from a menu where no error line shows, set the list
// aside, starts knowing no device and says so. Before, it exited at once
// with the reason on a terminal nobody sees.
func TestDamagedTrustStoreStartsTheAppKnowingNoDevice(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trust.json"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openSettings(dir, ui.Settings{DeviceName: "test", DownloadDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, problem, err := startEngine(dir, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("the app did not start: %v", err)
	}
	defer eng.Close()
	want := "The list of devices Ferry knew could not be read, so Ferry starts knowing none: devices you trusted or paired show a verification code again, and their offers ask first. The file was kept as trust.json.damaged in " + dir + "."
	if problem == nil || problem.Text != want {
		t.Fatalf("said %+v, want %q", problem, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "trust.json.damaged")); err != nil || string(b) != "garbage" {
		t.Errorf("the damaged list: %q, %v", b, err)
	}
}

func joinedErrs(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
