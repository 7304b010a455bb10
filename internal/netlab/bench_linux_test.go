//go:build linux

package netlab

import (
	"io"
	"testing"
	"time"
)

// BenchmarkForwarderTCP measures the forwarder's ceiling: one kernel TCP
// stream from Sender to Receiver over a 1500-byte-MTU path, both ends in this
// process, unimpaired (the straight-through path) and with 1 ms of delay each
// way (every packet goes through the delay line and the writer goroutine).
// Run as root:
//
//	go test -run '^$' -bench Forwarder -benchtime 5x ./internal/netlab
func BenchmarkForwarderTCP(b *testing.B) {
	for _, c := range []struct {
		name string
		im   Impairment
	}{
		{"unimpaired", Impairment{}},
		{"delay1ms", Impairment{Delay: time.Millisecond}},
	} {
		b.Run(c.name, func(b *testing.B) {
			lab := newLab(b, Config{})
			if err := lab.SetImpairment("main", Both, c.im); err != nil {
				b.Fatal(err)
			}
			snd, rcv := tcpPair(b, lab, "main")
			const chunk = 64 << 20
			errc := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, rcv)
				errc <- err
			}()
			buf := make([]byte, 256<<10)
			b.SetBytes(chunk)
			start := time.Now()
			for b.Loop() {
				for sent := 0; sent < chunk; sent += len(buf) {
					if _, err := snd.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			elapsed := time.Since(start)
			// Bytes still in flight are a few socket buffers out of b.N*64 MiB.
			b.ReportMetric(float64(b.N)*chunk*8/elapsed.Seconds()/1e6, "Mbit/s")
			st := lab.Stats()[0]
			b.ReportMetric(float64(st.SenderToReceiver.Delivered)/elapsed.Seconds(), "pkts/s")
			snd.Close()
			<-errc
		})
	}
}
