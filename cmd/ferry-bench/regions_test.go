package main

import (
	"bytes"
	"context"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

func TestRegionDurations(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is running already (go test -trace)")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ctx, task := trace.NewTask(context.Background(), "upload")
	outer := trace.StartRegion(ctx, "receive")
	for range 3 {
		inner := trace.StartRegion(ctx, "write")
		for t0 := time.Now(); time.Since(t0) < time.Millisecond; {
		}
		inner.End()
	}
	done := make(chan struct{})
	go func() { // another goroutine's region of the same type
		trace.WithRegion(ctx, "write", func() {})
		close(done)
	}()
	<-done
	outer.End()
	task.End()
	trace.StartRegion(ctx, "unended")
	trace.Stop()

	stats, err := regionDurations(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stats["write"]); n != 4 {
		t.Fatalf("%d write regions, want 4", n)
	}
	if len(stats["receive"]) != 1 || len(stats["task upload"]) != 1 || stats["unended"] != nil {
		t.Fatalf("regions %v", stats)
	}
	var writes time.Duration
	for _, d := range stats["write"] {
		writes += d
	}
	if r := stats["receive"][0]; writes < 3*time.Millisecond || r < writes || stats["task upload"][0] < r {
		t.Fatalf("receive %v, its writes %v, the task %v", r, writes, stats["task upload"][0])
	}
	var out strings.Builder
	if err := printRegions(&out, stats); err != nil || !strings.Contains(out.String(), "task upload") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
