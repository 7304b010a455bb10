package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/ui"
)

// The history written by the Ferry of before peers had kinds
// (engine/testdata/legacy-config, see its README) loads unchanged, its
// peer IDs read as Ferry devices.
func TestLegacyHistoryLoads(t *testing.T) {
	for _, side := range []string{"receiver", "sender"} {
		b, err := os.ReadFile(filepath.Join("..", "engine", "testdata", "legacy-config", side, historyFile))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, historyFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := openHistory(dir)
		if err != nil {
			t.Fatal(err)
		}
		entries := h.list()
		if len(entries) < 3 {
			t.Fatalf("%s: %d entries", side, len(entries))
		}
		var done, cancelled int
		for _, e := range entries {
			id, err := peer.Parse(e.PeerID)
			if err != nil || id.Kind != peer.Ferry || id.String() != e.PeerID {
				t.Fatalf("%s: entry %s names peer %q (%+v, %v)", side, e.ID, e.PeerID, id, err)
			}
			switch e.State {
			case ui.StateDone:
				done++
			case ui.StateCancelled:
				cancelled++
			}
		}
		if done < 2 || cancelled != 1 {
			t.Fatalf("%s: %d done, %d cancelled: %+v", side, done, cancelled, entries)
		}
	}
}
