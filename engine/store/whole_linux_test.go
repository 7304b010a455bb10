package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ferrydrop/ferry/internal/directio"
)

// Where linkat refuses AT_EMPTY_PATH (Linux before 6.10, without a
// privilege), a whole file is linked through /proc/self/fd, and still never
// over anything.
func TestWholeFileLinkedThroughProc(t *testing.T) {
	was := emptyPathRefused.Load()
	emptyPathRefused.Store(true)
	t.Cleanup(func() { emptyPathRefused.Store(was) })
	d, dir := openDest(t)
	writeFile(t, dir, "a/x.txt", "old")
	p := createWhole(t, d, "a/x.txt")
	if _, err := p.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "a/x.txt", 3); err != nil || saved != "a/x (1).txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"a/x.txt": "old", "a/x (1).txt": "new"})
}

// A whole file is held by its bare descriptor while its writes are small;
// a larger write, a read, a truncate or a sync wraps it in an os.File, and
// it goes on as any partial. Nothing reaches a closed descriptor.
func TestWholeFileBareDescriptor(t *testing.T) {
	d, dir := openDest(t)
	p := createWhole(t, d, "a/small.txt")
	if _, err := p.WriteAt([]byte("world"), 6); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("hello "), 0); err != nil {
		t.Fatal(err)
	}
	if p.raw == nil || p.f != nil {
		t.Fatalf("small writes wrapped the descriptor: raw %v, f %v", p.raw, p.f)
	}
	if saved, err := d.Finalize(p, "a/small.txt", 11); err != nil || saved != "a/small.txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}

	q := createWhole(t, d, "a/big.bin")
	big := bytes.Repeat([]byte("0123456789abcdef"), directio.Min/16)
	if _, err := q.WriteAt([]byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := q.WriteAt(big, 4); err != nil { // past directio.Min: through an os.File
		t.Fatal(err)
	}
	if q.f == nil {
		t.Fatal("a write past directio.Min did not wrap the descriptor")
	}
	if _, err := q.WriteAt([]byte("HE"), 0); err != nil { // small, but wrapped now
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := q.ReadAt(buf, 0); err != nil || string(buf) != "HEad" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	if saved, err := d.Finalize(q, "a/big.bin", int64(4+len(big))); err != nil || saved != "a/big.bin" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}

	r := createWhole(t, d, "a/read.txt")
	if _, err := r.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Size(); err != nil || n != 3 {
		t.Fatalf("Size = %d, %v", n, err)
	}
	if r.f == nil {
		t.Fatal("Size did not wrap the descriptor")
	}
	if _, err := d.Finalize(r, "a/read.txt", 3); err != nil {
		t.Fatal(err)
	}

	// Closed (a discard racing the last write): writes, reads and the
	// final name fail, and nothing is written anywhere.
	c := createWhole(t, d, "a/closed.txt")
	if err := d.Discard(c); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteAt([]byte("late"), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteAt after close: %v, want os.ErrClosed", err)
	}
	if _, err := c.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadAt after close: %v, want os.ErrClosed", err)
	}
	if saved, err := d.Finalize(c, "a/closed.txt", 4); err == nil {
		t.Errorf("Finalize after close saved %q", saved)
	}
	assertTree(t, dir, map[string]string{"a/small.txt": "hello world", "a/big.bin": "HEad" + string(big), "a/read.txt": "abc"})
}

// Writes racing the close of a bare descriptor either land in the file or
// fail; none reaches the descriptor's number once closed (go test -race).
func TestWholeFileWritesRaceClose(t *testing.T) {
	d, _ := openDest(t)
	for i := range 50 {
		p := createWhole(t, d, fmt.Sprintf("r/%d", i))
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.WriteAt([]byte("data"), int64(w*4))
			}()
		}
		d.Discard(p)
		wg.Wait()
	}
}
