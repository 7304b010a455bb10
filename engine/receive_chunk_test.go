package engine

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadChunk checks that readChunk reads like io.ReadFull, however the
// transport cuts the bytes, and that its CRC is the whole chunk's.
func TestReadChunk(t *testing.T) {
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	want := crc32.Checksum(data, castagnoli)
	cases := []struct {
		name string
		r    func() io.Reader
		n    int   // bytes asked for
		err  error // nil: the chunk arrives whole
	}{
		{"one read", func() io.Reader { return bytes.NewReader(data) }, len(data), nil},
		{"one byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }, len(data), nil},
		{"halves", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }, len(data), nil},
		{"EOF with the last bytes", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }, len(data), nil},
		{"more than the chunk follows", func() io.Reader { return bytes.NewReader(append(data, 1, 2, 3)) }, len(data), nil},
		{"empty chunk", func() io.Reader { return bytes.NewReader(nil) }, 0, nil},
		{"stream ends mid-chunk", func() io.Reader { return bytes.NewReader(data[:500]) }, len(data), io.ErrUnexpectedEOF},
		{"stream ends before the chunk", func() io.Reader { return bytes.NewReader(nil) }, len(data), io.EOF},
		{"stream breaks mid-chunk", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:700]), iotest.ErrReader(errBroken))
		}, len(data), errBroken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := make([]byte, c.n)
			crc, err := readChunk(c.r(), p)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if c.err != nil {
				return
			}
			if !bytes.Equal(p, data[:c.n]) {
				t.Fatal("the chunk's bytes differ from what was sent")
			}
			if w := crc32.Checksum(data[:c.n], castagnoli); crc != w || (c.n == len(data) && crc != want) {
				t.Fatalf("CRC %08x, want %08x", crc, w)
			}
		})
	}
}

var errBroken = errors.New("connection broken")
