package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ferrydrop/ferry/internal/directio"
)

// Direct writes and page-cache writes land in one file in any order, and
// what reads back (through the cache) is what was written; a reserved
// partial is cut to its declared size when finalized.
func TestDirectWritesMixWithBuffered(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "buffered", true: "direct"}[direct], func(t *testing.T) {
			d, dir := openDest(t)
			d.SetBufferedIO(!direct)
			const chunk = 1 << 20
			want := make([]byte, 3*chunk+1234) // the tail is not aligned
			rand.Read(want)
			p, err := d.CreatePartial("big.bin")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reserve(context.Background(), int64(len(want))+chunk); err != nil {
				t.Fatal(err)
			}
			buf := directio.Buffer(chunk)
			for _, i := range []int{2, 0, 3, 1} { // out of order, as chunks land
				n := copy(buf, want[i*chunk:])
				if _, err := p.WriteAt(buf[:n], int64(i*chunk)); err != nil {
					t.Fatal(err)
				}
			}
			// An unaligned buffer of aligned length still works (buffered).
			odd := make([]byte, chunk+1)[1:]
			copy(odd, want[chunk:])
			if _, err := p.WriteAt(odd, chunk); err != nil {
				t.Fatal(err)
			}
			_, directBytes := p.w.Stats()
			usedDirect := directBytes > 0
			got := make([]byte, len(want))
			if _, err := p.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("read back differs from what was written")
			}
			if _, err := d.Finalize(p, "big.bin", int64(len(want))); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "big.bin")); err != nil || !bytes.Equal(b, want) {
				t.Fatalf("final file differs (%v)", err)
			}
			// On Linux the temp dir's file system normally takes O_DIRECT;
			// if it refused, the fallback must have kept the data intact (above).
			if direct && runtime.GOOS == "linux" && !usedDirect {
				t.Logf("O_DIRECT refused by the file system under %s; wrote through the cache", dir)
			}
			if !direct && usedDirect {
				t.Error("direct writes used although off")
			}
		})
	}
}
