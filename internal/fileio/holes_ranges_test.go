package fileio

import (
	"errors"
	"testing"
)

// What Windows answers about a file's allocated ranges is read with care:
// an answer that could loop for ever or go back (no range yet more, ranges
// out of order, a range of no length) or an error is "cannot tell", so the
// whole file counts as data, never as holes; one that goes past the file's
// size is cut at it.
func TestRangesAfterReadsWindowsAnswersWithCare(t *testing.T) {
	const mib, size = 1 << 20, 8 << 20
	fixed := func(rs []allocatedRange, more bool, err error) queryRanges {
		return func(off, length int64, out []allocatedRange) (int, bool, error) {
			return copy(out, rs), more, err
		}
	}
	for _, tc := range []struct {
		name  string
		query queryRanges
		holes int64
	}{
		{"an error", fixed(nil, false, errors.New("ERROR_INVALID_FUNCTION")), 0},
		{"more with no range", fixed(nil, true, nil), 0},
		{"out of order", fixed([]allocatedRange{{4 * mib, mib}, {0, mib}}, false, nil), 0},
		{"overlapping", fixed([]allocatedRange{{0, 2 * mib}, {mib, mib}}, false, nil), 0},
		{"no length", fixed([]allocatedRange{{0, 0}}, false, nil), 0},
		{"before the range asked, and more", fixed([]allocatedRange{{0, mib}}, true, nil), 0},
		{"nothing allocated", fixed(nil, false, nil), size},
		{"all allocated (not sparse)", fixed([]allocatedRange{{0, size}}, false, nil), 0},
		{"past the end", fixed([]allocatedRange{{7 * mib, 100 * mib}}, false, nil), 7 * mib},
		{"two ranges", fixed([]allocatedRange{{0, 4096}, {5 * mib, mib}}, false, nil), 6 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := holeBytes(rangesAfter(tc.query, size), size, mib); got != tc.holes {
				t.Errorf("%d bytes of holes, want %d", got, tc.holes)
			}
			runs := holeChunks(rangesAfter(tc.query, size), size, mib, 100)
			var listed int64
			for _, r := range runs {
				listed += r.Count * mib
			}
			if listed != tc.holes {
				t.Errorf("HoleChunks lists %v (%d bytes), want %d", runs, listed, tc.holes)
			}
		})
	}
}

// A query that keeps saying more, a range at a time, is asked again from
// where its last page ended, never from the start: a file of many runs is
// read in as many asks as pages.
func TestRangesAfterAsksOnFromThePagesEnd(t *testing.T) {
	const mib, runs = 1 << 20, 200
	var asks []int64
	q := func(off, length int64, out []allocatedRange) (int, bool, error) {
		asks = append(asks, off)
		first := (off + 2*mib - 1) / (2 * mib) // runs of 1 MiB every 2 MiB
		n := 0
		for i := first; i < runs && n < 1; i++ {
			out[n] = allocatedRange{offset: i * 2 * mib, length: mib}
			n++
		}
		return n, first+int64(n) < runs, nil
	}
	size := int64(runs * 2 * mib)
	if got := holeBytes(rangesAfter(q, size), size, mib); got != size/2 {
		t.Fatalf("%d bytes of holes, want %d", got, size/2)
	}
	if len(asks) != runs {
		t.Errorf("%d asks for %d pages of one range", len(asks), runs)
	}
	for i := 1; i < len(asks); i++ {
		if asks[i] <= asks[i-1] {
			t.Fatalf("ask %d from %d after %d: went back", i, asks[i], asks[i-1])
		}
	}
}
