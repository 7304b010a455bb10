package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// TestMigrationQuick is the CI form of `ferry-bench migrate`: every case
// once, on a small file. Each must finish verified; the QUIC cases in the
// same session, with a path change reported; the TCP cut and the moved
// receiver by reconnecting, sending again at most what may have been in
// flight. Stalls are logged, not asserted: the full figures come from the
// bench command (docs/benchmarks/migration.md). Needs root.
func TestMigrationQuick(t *testing.T) {
	if err := netlab.Available(); err != nil {
		t.Skipf("skipping the migration lab: %v (run the tests as root on Linux)", err)
	}
	if testing.Short() {
		t.Skip("skipping the migration lab in -short mode")
	}
	cli := filepath.Join(t.TempDir(), "ferry-cli")
	if out, err := exec.Command("go", "build", "-o", cli, "../ferry-cli").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const size = 32 << 20
	results, err := migrate(t.Context(), 1, size, "", cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(migCases) {
		t.Fatalf("%d results for %d cases", len(results), len(migCases))
	}
	for _, r := range results {
		t.Logf("%s: stall %.0f ms, re-sent %d B, reconnects %d, find %.0f ms, paths %+v", r.Case, r.StallMs, r.ResentB, r.Reconnects, r.FindMs, r.Paths)
		if r.Err != "" {
			t.Errorf("%s: %s", r.Case, r.Err)
			continue
		}
		// What a reconnect sends again is what was in flight: a few
		// chunks per stream, far below half the file.
		if r.ResentB > size/2 {
			t.Errorf("%s: %d bytes sent again for a %d-byte file", r.Case, r.ResentB, size)
		}
	}
}
