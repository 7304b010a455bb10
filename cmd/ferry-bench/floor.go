package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/ferrydrop/ferry/engine/merkle"
)

func init() {
	register(command{name: "floor", summary: "the per-byte work no transfer of Ferry's can skip, alone: BLAKE3 leaves, AES-GCM records, CRC32C, a copy (CPU-s per GiB)", run: runFloor})
}

// floorSet is the working set the floor's steps read: larger than the
// CPU's caches, as a transfer's chunks are.
const floorSet = 64

// A floorStep does one GiB's worth of one kind of per-byte work over the
// working set, 1 MiB at a time.
type floorStep struct {
	name string
	run  func(set [][]byte)
}

func floorSteps() []floorStep {
	key := make([]byte, 16) // TLS 1.3 between two Ferry peers: TLS_AES_128_GCM_SHA256
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	nonce := make([]byte, gcm.NonceSize())
	const record = 16 << 10 // the largest TLS record, as crypto/tls writes a large Write
	out := make([]byte, 0, record+gcm.Overhead())
	var sealed [][]byte // records to open
	dst := make([]byte, 1<<20)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	hasher := merkle.NewHasher()
	gib := func(set [][]byte, f func(chunk []byte)) {
		for i := range 1024 {
			f(set[i%len(set)])
		}
	}
	return []floorStep{
		{"BLAKE3 leaf of a 1 MiB chunk (merkle.Hasher.Leaf)", func(set [][]byte) {
			gib(set, func(c []byte) { hasher.Leaf(c) })
		}},
		{"AES-128-GCM seal, 16 KiB records", func(set [][]byte) {
			gib(set, func(c []byte) {
				for o := 0; o < len(c); o += record {
					out = gcm.Seal(out[:0], nonce, c[o:o+record], nil)
				}
			})
		}},
		{"AES-128-GCM open, 16 KiB records", func(set [][]byte) {
			if sealed == nil {
				for _, c := range set {
					for o := 0; o < len(c); o += record {
						sealed = append(sealed, gcm.Seal(nil, nonce, c[o:o+record], nil))
					}
				}
			}
			for i := range 1024 * (1 << 20) / record {
				if _, err := gcm.Open(out[:0], nonce, sealed[i%len(sealed)], nil); err != nil {
					panic(err)
				}
			}
		}},
		{"copy of a 1 MiB chunk (memmove)", func(set [][]byte) {
			gib(set, func(c []byte) { copy(dst, c) })
		}},
		{"CRC32C of a 1 MiB chunk, from memory", func(set [][]byte) {
			gib(set, func(c []byte) { crc32.Checksum(c, castagnoli) })
		}},
		{"copy in 16 KiB pieces, CRC32C of each right after", func(set [][]byte) {
			gib(set, func(c []byte) {
				var crc uint32
				for o := 0; o < len(c); o += record {
					copy(dst[o:], c[o:o+record])
					crc = crc32.Update(crc, castagnoli, dst[o:o+record])
				}
			})
		}},
	}
}

// runFloor measures each step in interleaved rounds and prints the CPU
// seconds per GiB (this process's user + system time), the median and
// every round.
func runFloor(_ context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	rounds := fs.Int("rounds", 5, "rounds; each runs every step once over 1 GiB")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := make([][]byte, floorSet)
	for i := range set {
		set[i] = make([]byte, 1<<20)
		for j := range set[i] {
			set[i][j] = byte(i + j*7 + j>>11)
		}
	}
	steps := floorSteps()
	secs := make([][]float64, len(steps))
	for range *rounds {
		for i, s := range steps {
			start := selfCPU()
			s.run(set)
			secs[i] = append(secs[i], selfCPU()-start)
		}
	}
	fmt.Fprintf(out, "| per-byte work, one goroutine | CPU-s per GiB (median) | rounds |\n|---|---:|---|\n")
	for i, s := range steps {
		runs := make([]string, len(secs[i]))
		for k, v := range secs[i] {
			runs[k] = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(out, "| %s | %.3f | %s |\n", s.name, median(secs[i]), strings.Join(runs, " "))
	}
	return nil
}
