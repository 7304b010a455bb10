package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
)

// testReceiver is a receiver of files, all accepted, in chunks of chunk
// bytes, into a fresh destination, outside any session: what landChunk
// and resolve need and nothing more.
func testReceiver(t *testing.T, chunk int, files []wire.FileEntry) *receiver {
	t.Helper()
	return testReceiverOn(t, testEngine(t, Options{}), chunk, files)
}

// testReceiverOn is testReceiver on e, into its download folder: a second
// one on the same engine is a later attempt at the same files.
func testReceiverOn(t *testing.T, e *Engine, chunk int, files []wire.FileEntry) *receiver {
	t.Helper()
	return testReceiverOfFolders(t, e, chunk, files, nil)
}

// testReceiverOfFolders is testReceiverOn of an offer of the empty folders
// folders too (made by makeFolders).
func testReceiverOfFolders(t *testing.T, e *Engine, chunk int, files []wire.FileEntry, folders []string) *receiver {
	t.Helper()
	in := e.newInbox(peer.ID{}, "sender", "pipe", nil, nil)
	var total int64
	for _, f := range files {
		total += f.Size
	}
	offer := &wire.Offer{Transfer: newTransferID(), ChunkSize: chunk, Files: len(files), TotalBytes: total, Folders: len(folders)}
	msgs := encode(offer, &wire.OfferFiles{Files: files})
	if len(folders) > 0 {
		msgs = append(msgs, encode(&wire.OfferFolders{Paths: folders})...)
	}
	rx := &receiver{inbox: in, ctl: newControl(bytesStream{bytes.NewReader(msgs)}), files: map[uint32]*rxFile{},
		complete: make(chan struct{}), done: make(chan struct{}), ctlDone: make(chan struct{}), full: make(chan struct{})}
	t.Cleanup(rx.closeList)
	if err := rx.takeOffer(); err != nil {
		t.Fatal(err)
	}
	dest, err := store.Open(e.DownloadDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dest.Close() })
	rx.Dest, rx.DestDir = dest, e.DownloadDir()
	for i := range files {
		rx.Accepted = append(rx.Accepted, i)
		rx.status = append(rx.status, fileAccepted)
	}
	return rx
}

// dupReceiver is a receiver of one accepted file of two chunks, "d/a.bin".
func dupReceiver(t *testing.T, data []byte, chunk int) (*receiver, *rxFile) {
	t.Helper()
	rx := testReceiver(t, chunk, []wire.FileEntry{{Path: "d/a.bin", Size: int64(len(data))}})
	rx.mu.Lock()
	f, err := rx.fileLocked(0, true)
	rx.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if f.tree.Len() != 2 {
		t.Fatalf("%d bytes in chunks of %d make %d chunks, want 2", len(data), chunk, f.tree.Len())
	}
	return rx, f
}

// A chunk that the endgame sent twice may be written by two streams at
// once. The file is finalized when the last of those writes ends, never
// beside one: a write into a partial that Finalize closed and renamed
// fails, and that failure used to fail a file that was saved whole (CI,
// TestSessionGrowsToWhatTheReceiverTakes: "1 of 1 files could not be
// saved"). And a copy whose write fails after the other copy landed costs
// nothing.
func TestDuplicateChunkInFlightDoesNotFailTheFile(t *testing.T) {
	const chunk = 64 << 10
	data := make([]byte, chunk+1000)
	rand.Read(data)
	parts := [][]byte{data[:chunk], data[chunk:]}
	leaves := []merkle.Hash{merkle.Leaf(parts[0]), merkle.Leaf(parts[1])}
	hdr := func(i uint32) wire.DataHeader {
		return wire.DataHeader{File: 0, Chunk: i, Length: uint32(len(parts[i])), Leaf: leaves[i]}
	}
	crc := func(i int) uint32 { return crc32.Checksum(parts[i], castagnoli) }

	for _, tc := range []struct {
		name string
		err  error // how the second copy's write ends
	}{
		{"the second copy's write succeeds", nil},
		{"the second copy's write fails", os.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx, f := dupReceiver(t, data, chunk)
			h := merkle.NewHasher()
			if err := rx.landChunk(context.Background(), f, hdr(0), parts[0], crc(0), h); err != nil {
				t.Fatal(err)
			}
			if err := rx.setRoot(context.Background(), f, wire.DataHeader{File: 0, Chunk: wire.RootChunk, Leaf: merkle.Root(leaves)}, nil); err != nil {
				t.Fatal(err)
			}
			// One stream's copy of the last chunk passed landChunk's checks
			// and is being written (as landChunk counts it) ...
			rx.mu.Lock()
			f.writing++
			rx.mu.Unlock()
			// ... when another stream's copy lands whole.
			if err := rx.landChunk(context.Background(), f, hdr(1), parts[1], crc(1), h); err != nil {
				t.Fatal(err)
			}
			rx.mu.Lock()
			early := f.resolved || f.finalizing
			rx.mu.Unlock()
			if early {
				t.Fatal("the file was finalized while a write into it was in flight")
			}
			// The first copy's write ends.
			rx.wrote(context.Background(), f, hdr(1), leaves[1], crc(1), len(parts[1]), tc.err)
			rx.mu.Lock()
			resolved, ok := f.resolved, f.ok
			rx.mu.Unlock()
			if !resolved || !ok {
				t.Fatalf("after the last write ended: resolved %v, saved %v; want the file saved", resolved, ok)
			}
			if _, v := rx.Counts(); v != 1 {
				t.Fatalf("%d files verified, want 1", v)
			}
			got, err := os.ReadFile(filepath.Join(rx.Dest.Dir(), "d", "a.bin"))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the saved file: %d bytes (%v), want the %d sent", len(got), err, len(data))
			}
		})
	}
}

// A write that fails while no other copy of its chunk landed fails the
// file, with the reason.
func TestChunkWriteFailureFailsTheFile(t *testing.T) {
	const chunk = 64 << 10
	data := make([]byte, chunk+1000)
	rx, f := dupReceiver(t, data, chunk)
	leaf := merkle.Leaf(data[:chunk])
	rx.mu.Lock()
	f.writing++
	rx.mu.Unlock()
	rx.wrote(context.Background(), f, wire.DataHeader{File: 0, Chunk: 0, Length: chunk, Leaf: leaf}, leaf, 0, chunk, errors.New("disk on fire"))
	rx.mu.Lock()
	resolved, ok := f.resolved, f.ok
	rx.mu.Unlock()
	if !resolved || ok {
		t.Fatalf("resolved %v, saved %v; want the file failed", resolved, ok)
	}
}
