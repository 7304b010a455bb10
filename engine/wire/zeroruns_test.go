package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// runsPayload encodes pairs of (start, count) as a root frame's payload.
func runsPayload(pairs ...uint32) []byte {
	var b []byte
	for _, v := range pairs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// zeroRunsCases are payloads of a root frame's runs of zeros for a file of
// chunks chunks, the hostile ones refused; they are FuzzParseZeroRuns's seeds.
var zeroRunsCases = []struct {
	name    string
	payload []byte
	chunks  int
	ok      bool
}{
	{"none", nil, 4, true},
	{"one run", runsPayload(1, 2), 4, true},
	{"every chunk", runsPayload(0, 4), 4, true},
	{"runs that touch", runsPayload(0, 1, 1, 1), 4, true},
	{"runs apart", runsPayload(0, 1, 2, 2), 4, true},
	{"not whole runs", runsPayload(0, 1)[:7], 4, false},
	{"an empty run", runsPayload(1, 0), 4, false},
	{"overlapping runs", runsPayload(0, 2, 1, 2), 8, false},
	{"a run repeated", runsPayload(1, 1, 1, 1), 8, false},
	{"runs out of order", runsPayload(4, 1, 1, 1), 8, false},
	{"a run beyond the file", runsPayload(3, 2), 4, false},
	{"a run wholly beyond the file", runsPayload(9, 1), 4, false},
	{"a run whose end wraps", runsPayload(2, 0xffffffff), 4, false},
	{"a run at the last index", runsPayload(0xffffffff, 1), 4, false},
	{"more runs than chunks", runsPayload(0, 1, 1, 1, 2, 1), 2, false},
	{"more runs than fit a chunk", bytes.Repeat(runsPayload(0, 1), 4096/wire.ZeroRunLen+1), 1 << 20, false},
}

const zeroRunsChunk = 4 << 10 // the smallest chunk size: 512 runs fit

func TestParseZeroRuns(t *testing.T) {
	for _, tc := range zeroRunsCases {
		runs, err := wire.ParseZeroRuns(tc.payload, tc.chunks, zeroRunsChunk)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, wire.ErrProtocol) {
			t.Errorf("%s: %v is not a protocol error", tc.name, err)
		}
		if err == nil && !bytes.Equal(wire.AppendZeroRuns(nil, runs), tc.payload) {
			t.Errorf("%s: %v does not encode back to its payload", tc.name, runs)
		}
	}
	if fit := wire.ZeroRunsFit(wire.MaxChunkSize); fit != wire.MaxZeroRuns {
		t.Errorf("%d runs fit a root frame of 4 MiB chunks, want %d", fit, wire.MaxZeroRuns)
	}
}

// FuzzParseZeroRuns: never panics; what it accepts is whole runs, in order,
// apart, inside the file, no more than fit, and encodes back to the payload.
func FuzzParseZeroRuns(f *testing.F) {
	for _, tc := range zeroRunsCases {
		f.Add(tc.payload, tc.chunks)
	}
	f.Fuzz(func(t *testing.T, p []byte, chunks int) {
		if chunks < 0 || chunks > 1<<32 {
			return
		}
		runs, err := wire.ParseZeroRuns(p, chunks, zeroRunsChunk)
		if err != nil {
			if !errors.Is(err, wire.ErrProtocol) {
				t.Fatalf("%v is not a protocol error", err)
			}
			return
		}
		if len(runs) > wire.ZeroRunsFit(zeroRunsChunk) || len(runs) > chunks {
			t.Fatalf("%d runs accepted for %d chunks", len(runs), chunks)
		}
		var end uint64
		for _, r := range runs {
			if r.Count == 0 || uint64(r.Start) < end || uint64(r.Start)+uint64(r.Count) > uint64(chunks) {
				t.Fatalf("run %+v accepted after %d, in %d chunks", r, end, chunks)
			}
			end = uint64(r.Start) + uint64(r.Count)
		}
		if !bytes.Equal(wire.AppendZeroRuns(nil, runs), p) {
			t.Fatalf("%v does not encode back to %x", runs, p)
		}
	})
}
