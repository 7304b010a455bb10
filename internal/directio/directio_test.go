package directio

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestBufferAndAligned(t *testing.T) {
	for _, n := range []int{0, 1, Align, Min, 1 << 20} {
		b := Buffer(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Buffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		if got, want := Aligned(b, 0), n >= Min; got != want {
			t.Fatalf("Aligned(Buffer(%d)) = %v", n, got)
		}
	}
	b := Buffer(Min + Align)
	for _, c := range []struct {
		name string
		b    []byte
		off  int64
	}{
		{"offset buffer", b[1 : Min+1], 0},
		{"unaligned file offset", b[:Min], 512},
		{"unaligned length", b[:Min+100], 0},
		{"too small", b[:Align], 0},
	} {
		if Aligned(c.b, c.off) {
			t.Errorf("%s counted as aligned", c.name)
		}
	}
}

// Direct reads and writes agree with ordinary ones, including a read that
// runs into the end of the file (a short read continues through the cache).
func TestFileReadWrite(t *testing.T) {
	for _, on := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "f")
		want := make([]byte, 2*Min+1000)
		rand.Read(want)
		w, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		dw := New(w, os.O_WRONLY, on)
		buf := Buffer(Min)
		for _, off := range []int{Min, 0} {
			copy(buf, want[off:])
			if _, err := dw.WriteAt(buf, int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dw.WriteAt(want[2*Min:], 2*Min); err != nil { // unaligned tail
			t.Fatal(err)
		}
		wrote := dw.Direct()
		dw.Close()
		w.Close()

		r, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dr := New(r, os.O_RDONLY, on)
		got := make([]byte, 0, len(want))
		for off := 0; off < len(want); off += Min {
			n, err := dr.ReadAt(buf, int64(off))
			if err != nil && !(err == io.EOF && off+n == len(want)) {
				t.Fatalf("read at %d: %d, %v", off, n, err)
			}
			got = append(got, buf[:n]...)
		}
		read := dr.Direct()
		dr.Close()
		r.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("direct=%v: read back differs", on)
		}
		if !on && (wrote || read) {
			t.Error("direct I/O used although off")
		}
		t.Logf("direct=%v: direct writes %v, direct reads %v", on, wrote, read)
	}
}
