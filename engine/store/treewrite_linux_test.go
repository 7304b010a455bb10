package store

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkTreeWrite receives a tree of small files through a Dest as the
// engine does (CreateWhole, one WriteAt, Finalize): TW_N files (default
// 15,000) of 15 KiB, nine to a folder, two folders deep, as one copy of
// workload D about has them (docs/benchmarks/trees.md). cpu-µs/file is this
// process's CPU (user and system) per file, which the machine's load
// stretches less than the wall time. Run it against another build in
// turns, from engine/store, with the destination on tmpfs:
//
//	go test -c -o store.test . && TMPDIR=/dev/shm ./store.test -test.run '^$' -test.bench TreeWrite -test.benchtime 3x
func BenchmarkTreeWrite(b *testing.B) {
	n := envInt("TW_N", 15000)
	data := make([]byte, 15<<10)
	for i := range data {
		data[i] = byte(i)
	}
	var cpu float64
	for it := 0; it < b.N; it++ {
		dir := b.TempDir()
		d, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		c0 := selfCPU()
		for i := range n {
			rel := fmt.Sprintf("src/d%03d/sub%04d/f%d.go", i/900, i/9, i)
			p, err := d.CreateWhole(rel)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.WriteAt(data, 0); err != nil {
				b.Fatal(err)
			}
			if _, err := d.Finalize(p, rel, int64(len(data))); err != nil {
				b.Fatal(err)
			}
		}
		cpu += selfCPU() - c0
		d.Close()
		os.RemoveAll(dir)
	}
	b.ReportMetric(cpu/float64(b.N)/float64(n)*1e6, "cpu-µs/file")
}
