package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoopback moves one large file and many small ones end to end over
// each transport on loopback, in one process (so both sides share the CPU).
func BenchmarkLoopback(b *testing.B) {
	src := b.TempDir()
	big := filepath.Join(src, "big.bin")
	f, _ := os.Create(big)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	for range 256 {
		f.Write(buf)
	}
	f.Close()
	small := filepath.Join(src, "small")
	os.MkdirAll(small, 0o755)
	for i := range 2000 {
		os.WriteFile(filepath.Join(small, fmt.Sprintf("f%05d", i)), buf[:16<<10], 0o644)
	}
	for _, tp := range transportsUnderTest() {
		for _, w := range []struct {
			name  string
			path  string
			bytes int64
		}{{"big", big, 256 << 20}, {"small", small, 2000 * 16 << 10}} {
			b.Run(tp+"/"+w.name, func(b *testing.B) {
				recv := startReceiverB(b)
				send, _ := New(Options{ConfigDir: b.TempDir()})
				defer send.Close()
				b.SetBytes(w.bytes)
				for b.Loop() {
					os.RemoveAll(recv.DownloadDir())
					os.MkdirAll(recv.DownloadDir(), 0o755)
					res := sendWait(nil, send, target(recv), []string{w.path}, SendOptions{Transport: tp})
					if res.State != StateDone {
						b.Fatal(res.Err)
					}
				}
			})
		}
	}
}

func startReceiverB(b *testing.B) *Engine {
	e, err := New(Options{ConfigDir: b.TempDir(), DownloadDir: b.TempDir(), Listen: "127.0.0.1:0", Accept: AcceptAll})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	if err := e.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	return e
}
