package pack

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/klauspost/compress/zstd"
)

// text is compressible bytes: Go's own source, repeated to n.
func text(t testing.TB, n int) []byte {
	t.Helper()
	src, err := os.ReadFile(runtime.GOROOT() + "/src/net/http/server.go")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, src[:min(len(src), n-len(out))]...)
	}
	return out
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestPackRoundTrip(t *testing.T) {
	var c Codec
	for _, n := range []int{1000, 4096, 16 << 10, 1 << 20, 4 << 20} {
		src := text(t, n)
		packed, ok := c.Pack(make([]byte, 0, n), src)
		if !ok {
			t.Fatalf("%d bytes of source code did not pack", n)
		}
		if len(packed) > n-n/8 {
			t.Fatalf("%d bytes packed into %d", n, len(packed))
		}
		got := make([]byte, n)
		if err := c.Unpack(got, packed); err != nil {
			t.Fatalf("unpack %d: %v", n, err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("%d bytes came back different", n)
		}
	}
}

func TestPackLeavesWhatDoesNotShrink(t *testing.T) {
	var c Codec
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"random", random(1 << 20)},
		{"shorter than MinLen", text(t, MinLen-1)},
		{"empty", nil},
		{"beyond MaxLen", text(t, 4<<20+1)},
	} {
		if out, ok := c.Pack(nil, tc.src); ok {
			t.Errorf("%s: packed into %d bytes", tc.name, len(out))
		}
	}
}

// hostileUnpacks are payloads a peer may send for a chunk of want bytes.
func hostileUnpacks(t testing.TB) []struct {
	name string
	src  []byte
	want int
} {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	chunk := text(t, 64<<10)
	packed := enc.EncodeAll(chunk, nil)
	// Zeros pack into almost nothing: a frame that claims a gigabyte.
	bomb := enc.EncodeAll(make([]byte, 64<<20), nil)
	return []struct {
		name string
		src  []byte
		want int
	}{
		{"empty payload", nil, 1024},
		{"not zstd", []byte("this is not a zstd frame at all, just bytes"), 1024},
		{"truncated", packed[:len(packed)/2], len(chunk)},
		{"one byte short of the chunk", packed, len(chunk) + 1},
		{"one byte beyond the chunk", packed, len(chunk) - 1},
		{"a bomb of 64 MiB of zeros for a chunk of 1 MiB", bomb, 1 << 20},
		{"two frames, more than the chunk", append(append([]byte{}, packed...), packed...), len(chunk) + 1},
		{"a skippable frame alone", []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, 16},
		{"a chunk of no bytes", packed, 0},
		{"a chunk beyond MaxLen", packed, 4<<20 + 1},
	}
}

func TestUnpackHostile(t *testing.T) {
	var c Codec
	for _, tc := range hostileUnpacks(t) {
		dst := make([]byte, max(tc.want, 0), max(tc.want, 0)+64)
		tail := dst[len(dst):cap(dst)]
		for i := range tail {
			tail[i] = 0xAA
		}
		err := c.Unpack(dst, tc.src)
		if !errors.Is(err, ErrUnpack) {
			t.Errorf("%s: %v, want ErrUnpack", tc.name, err)
		}
		for i, b := range tail {
			if b != 0xAA {
				t.Fatalf("%s: wrote beyond the chunk, at %d", tc.name, i)
			}
		}
	}
}

// TestUnpackBombAllocatesLittle: a payload that would unpack to 64 MiB is
// refused without the 64 MiB being made.
func TestUnpackBombAllocatesLittle(t *testing.T) {
	var c Codec
	warm, _ := c.Pack(nil, text(t, 1<<20))
	if err := c.Unpack(make([]byte, 1<<20), warm); err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	bomb := enc.EncodeAll(make([]byte, 64<<20), nil)
	dst := make([]byte, 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		if err := c.Unpack(dst, bomb); !errors.Is(err, ErrUnpack) {
			t.Fatalf("bomb: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("four bombs allocated %d MiB", grew>>20)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "always": Always, "on": Always, "never": Never, "off": Never} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error(`ParseMode("fast") accepted`)
	}
}

// FuzzUnpack: any payload for a chunk of any length either unpacks to
// exactly that length or is ErrUnpack; never a panic, never a write
// beyond the chunk.
func FuzzUnpack(f *testing.F) {
	for _, tc := range hostileUnpacks(f) {
		if len(tc.src) < 1<<16 {
			f.Add(tc.src, uint16(tc.want))
		}
	}
	var c Codec
	ok, _ := c.Pack(nil, text(f, 4096))
	f.Add(ok, uint16(4096))
	f.Fuzz(func(t *testing.T, src []byte, n uint16) {
		dst := make([]byte, n, int(n)+16)
		err := c.Unpack(dst, src)
		if err != nil && !errors.Is(err, ErrUnpack) {
			t.Fatalf("%v is not ErrUnpack", err)
		}
		for _, b := range dst[len(dst):cap(dst)] {
			if b != 0 {
				t.Fatal("wrote beyond the chunk")
			}
		}
	})
}

func BenchmarkPack(b *testing.B) {
	var c Codec
	src := text(b, 1<<20)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		c.Pack(dst, src)
	}
}

func BenchmarkUnpack(b *testing.B) {
	var c Codec
	src := text(b, 1<<20)
	packed, _ := c.Pack(nil, src)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := c.Unpack(dst, packed); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCodecStartsNoGoroutine: a codec left to the collector leaves nothing
// running (Codec has no Close). Fewer after than before is no failure: a
// goroutine of the tests before ended meanwhile ("3 goroutines before, 2
// after", a CI rehearsal under -race).
func TestCodecStartsNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	var c Codec
	src := text(t, 1<<20)
	packed, ok := c.Pack(nil, src)
	if !ok {
		t.Fatal("did not pack")
	}
	if err := c.Unpack(make([]byte, len(src)), packed); err != nil {
		t.Fatal(err)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d after", before, after)
	}
	if left := testutil.Stacks("klauspost/compress/zstd"); left != "" {
		t.Fatalf("zstd's goroutines run on:\n%s", left)
	}
}
