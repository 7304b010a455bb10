package main

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

// writeHeapProfile writes the runtime's memory figures at this moment to
// path.json, then collects garbage and writes the heap profile (what is
// live now) to path, each temp then rename: a reader never sees half a
// file; the goroutines' stacks go to path.goroutines. LiveHeap in path.json is the heap left after that collection.
func writeHeapProfile(path string) {
	write := func(name string, fill func(f *os.File) error) {
		f, err := os.Create(name + ".tmp")
		if err != nil {
			return
		}
		err = fill(f)
		if cerr := f.Close(); err == nil && cerr == nil {
			os.Rename(name+".tmp", name)
		}
	}
	var ms, live runtime.MemStats
	rss := selfRSS()
	runtime.ReadMemStats(&ms)
	runtime.GC()
	runtime.ReadMemStats(&live)
	write(path, func(f *os.File) error { return pprof.Lookup("heap").WriteTo(f, 0) })
	write(path+".goroutines", func(f *os.File) error { return pprof.Lookup("goroutine").WriteTo(f, 1) })
	write(path+".json", func(f *os.File) error {
		return json.NewEncoder(f).Encode(map[string]any{"LiveHeap": live.HeapAlloc, "RSS": rss,
			"HeapAlloc": ms.HeapAlloc, "HeapInuse": ms.HeapInuse, "HeapIdle": ms.HeapIdle,
			"HeapReleased": ms.HeapReleased, "HeapSys": ms.HeapSys, "StackInuse": ms.StackInuse,
			"Sys": ms.Sys, "NextGC": ms.NextGC, "NumGC": ms.NumGC, "Goroutines": runtime.NumGoroutine(),
			"GCSys": ms.GCSys, "OtherSys": ms.OtherSys, "MSpanInuse": ms.MSpanInuse,
		})
	})
}

// selfRSS is this process's resident memory in bytes, from
// /proc/self/status (0 where there is none).
func selfRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}
