package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// createReceiver is a receiver of two accepted files outside any session:
// "d/a.bin" of two chunks of 64 KiB and "d/b.bin" of one.
func createReceiver(t *testing.T, a, b []byte) *receiver {
	t.Helper()
	return testReceiver(t, 64<<10, []wire.FileEntry{{Path: "d/a.bin", Size: int64(len(a))}, {Path: "d/b.bin", Size: int64(len(b))}})
}

// fileOf is the receiver's state of file i, as a data frame gets it.
func fileOf(t *testing.T, rx *receiver, i uint32) *rxFile {
	t.Helper()
	rx.mu.Lock()
	defer rx.mu.Unlock()
	f, err := rx.fileLocked(i, true)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// landAll lands data as file i's chunks of 64 KiB and its root, from the
// calling goroutine.
func landAll(t *testing.T, rx *receiver, i uint32, data []byte, chunks ...int) {
	t.Helper()
	f := fileOf(t, rx, i)
	h := merkle.NewHasher()
	for _, c := range chunks {
		part := data[c*64<<10 : min(len(data), (c+1)*64<<10)]
		hdr := wire.DataHeader{File: i, Chunk: uint32(c), Length: uint32(len(part)), Leaf: merkle.Leaf(part)}
		if err := rx.landChunk(context.Background(), f, hdr, part, crc32.Checksum(part, castagnoli), h); err != nil {
			t.Error(err)
		}
	}
}

// rootOf sends file i's root frame.
func rootOf(t *testing.T, rx *receiver, i uint32, data []byte) {
	t.Helper()
	var leaves []merkle.Hash
	for off := 0; off < len(data); off += 64 << 10 {
		leaves = append(leaves, merkle.Leaf(data[off:min(len(data), off+64<<10)]))
	}
	if err := rx.setRoot(context.Background(), fileOf(t, rx, i), wire.DataHeader{File: i, Chunk: wire.RootChunk, Leaf: merkle.Root(leaves)}, nil); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func checkSaved(t *testing.T, rx *receiver, name string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(rx.Dest.Dir(), "d", name))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes (%v), want the %d sent", name, len(got), err, len(want))
	}
}

// A file's partial is created outside the receiver's lock: while one
// stream's create is under way (system calls: a folder, the file, its
// preallocation), the other streams land their chunks and other files are
// saved. Under the lock, every stream waited for every create (D: 16.6 s
// of goroutines waiting for the lock in a 10 s transfer).
func TestCreateRunsOutsideTheReceiverLock(t *testing.T) {
	a, b := randomBytes(64<<10+500), randomBytes(3000)
	rx := createReceiver(t, a, b)
	inCreate, release := make(chan struct{}), make(chan struct{})
	rx.creating = func(f *rxFile) {
		if f.idx == 0 {
			close(inCreate)
			<-release
		}
	}
	first := make(chan struct{})
	go func() {
		defer close(first)
		landAll(t, rx, 0, a, 0)
	}()
	<-inCreate
	if !rx.mu.TryLock() {
		close(release)
		t.Fatal("the receiver's lock is held while a file's partial is created")
	}
	rx.mu.Unlock()
	other := make(chan struct{})
	go func() {
		defer close(other)
		landAll(t, rx, 1, b, 0)
		rootOf(t, rx, 1, b)
	}()
	select {
	case <-other:
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("another file's chunk waited for a create")
	}
	if _, v := rx.Counts(); v != 1 {
		t.Errorf("%d files saved while a.bin was being created, want 1 (b.bin)", v)
	}
	close(release)
	<-first
	landAll(t, rx, 0, a, 1)
	rootOf(t, rx, 0, a)
	if _, v := rx.Counts(); v != 2 {
		t.Fatalf("%d files saved, want 2", v)
	}
	checkSaved(t, rx, "a.bin", a)
	checkSaved(t, rx, "b.bin", b)
	rx.mu.Lock()
	open := rx.open
	rx.mu.Unlock()
	if open != 0 {
		t.Errorf("%d files in flight after both were saved, want 0", open)
	}
}

// Two streams with chunks of the same new file: the second waits for the
// first one's create and writes into the same partial; the file is created
// once.
func TestOneCreatePerFileFromTwoStreams(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := createReceiver(t, a, nil)
	var creates atomic.Int32
	inCreate, release := make(chan struct{}), make(chan struct{})
	rx.creating = func(f *rxFile) {
		if creates.Add(1) == 1 {
			close(inCreate)
			<-release
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { landAll(t, rx, 0, a, 0) })
	<-inCreate
	second := make(chan struct{})
	go func() {
		defer close(second)
		landAll(t, rx, 0, a, 1)
	}()
	select {
	case <-second:
		t.Error("a chunk of a file being created landed before its create ended")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	<-second
	rootOf(t, rx, 0, a)
	if n := creates.Load(); n != 1 {
		t.Errorf("the file was created %d times, want once", n)
	}
	if _, v := rx.Counts(); v != 1 {
		t.Fatalf("%d files saved, want 1", v)
	}
	checkSaved(t, rx, "a.bin", a)
}

// A file resolved (failed) while its partial was being created: the new
// partial is discarded, its place among the files in flight given back,
// and the chunk that started it is dropped.
func TestResolvedWhileCreated(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := createReceiver(t, a, nil)
	f := fileOf(t, rx, 0)
	rx.creating = func(f *rxFile) { rx.resolve(f, false, "", wire.CodeIO, "cancelled meanwhile") }
	landAll(t, rx, 0, a, 0)
	rx.mu.Lock()
	open, part, ok := rx.open, f.part, f.ok
	rx.mu.Unlock()
	if open != 0 || part != nil || ok {
		t.Errorf("after a resolve during the create: %d files open, partial %v, saved %v; want 0, none, false", open, part, ok)
	}
	if _, v := rx.Counts(); v != 0 {
		t.Errorf("%d files saved, want 0", v)
	}
	left, _ := filepath.Glob(filepath.Join(rx.Dest.Dir(), "d", "*"))
	if len(left) != 0 {
		t.Errorf("left in the destination: %v", left)
	}
}
