package engine

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestFileListCopiesOnce: the walk's list of 10^5 files (workload D's size)
// is built in blocks and copied once, so it allocates about twice the final
// list; appending to one slice allocated about five times it, growing by a
// quarter at a time. Counted in bytes allocated, not timed. The entries
// come back in the order added, and a short list is not copied at all.
func TestFileListCopiesOnce(t *testing.T) {
	const n = 100_000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "go-1/src/f" + strconv.Itoa(i)
	}
	root := &givenPath{dir: "/src", name: "go-1", as: "go-1"}
	var l fileList
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		l.add(localFile{FileEntry: wire.FileEntry{Path: paths[i], Size: int64(i)}, root: root})
	}
	files := l.list()
	runtime.ReadMemStats(&after)
	final := uint64(n) * uint64(unsafe.Sizeof(localFile{}))
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes allocated, %.1f times the list", got, float64(got)/float64(final))
	if got > 3*final {
		t.Errorf("building a list of %d files allocated %d bytes, %.1f times the list; want at most 3", n, got, float64(got)/float64(final))
	}
	if len(files) != n {
		t.Fatalf("%d files, want %d", len(files), n)
	}
	for i, f := range files {
		if f.Path != paths[i] || f.Size != int64(i) || f.root != root {
			t.Fatalf("entry %d is %+v", i, f)
		}
	}

	var short fileList
	for i := range minListBlock {
		short.add(localFile{FileEntry: wire.FileEntry{Path: paths[i]}})
	}
	if got := short.list(); len(got) != minListBlock || &got[0] != &short.cur[0] {
		t.Errorf("a list of one block was copied (or lost entries: %d)", len(got))
	}
}

// BenchmarkBuildManifest is the sender's whole walk before its offer, the
// list included: FERRY_BENCH_TREE (e.g. workload D, /work/treeD).
//
//	FERRY_BENCH_TREE=/work/treeD go test -run '^$' -bench BuildManifest -benchtime 5x ./engine/
func BenchmarkBuildManifest(b *testing.B) {
	root := os.Getenv("FERRY_BENCH_TREE")
	if root == "" {
		b.Skip("FERRY_BENCH_TREE not set")
	}
	var n int
	cpu0 := testutil.CPUTime()
	for b.Loop() {
		files, err := buildManifest([]string{root})
		if err != nil {
			b.Fatal(err)
		}
		n = len(files)
	}
	b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(b.N)/float64(n), "cpu-ns/file")
}
