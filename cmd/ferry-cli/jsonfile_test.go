package main

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// fileLineEvents is the table of TestFileLineSameAsEncoder and FuzzFileLine's
// seeds: names that need escaping (HTML, quotes, control bytes, invalid UTF-8,
// U+2028), every optional field, times in odd zones and years, and events
// the fast path must leave to encoding/json.
func fileLineEvents() []engine.Event {
	peer := engine.PeerInfo{Name: "Ann's <laptop> & \"co\"", ID: "ABCDEF", Trusted: true, Addr: "127.0.0.1:1"}
	when := time.Date(2026, 12, 2, 21, 30, 1, 123456789, time.UTC)
	ev := func(f engine.FileResult) engine.Event {
		return engine.Event{Time: when, Kind: engine.EventFile, TransferID: "t1", Delivery: "d1",
			Direction: engine.Receiving, Peer: peer, State: engine.StateActive, File: &f}
	}
	evs := []engine.Event{
		ev(engine.FileResult{Path: "go/src/a.go", Size: 1234, Verified: true, Root: "00ff"}),
		ev(engine.FileResult{Path: "a <b> & c\"d\\e", SavedAs: "a (1).go", Size: 0, Verified: true}),
		ev(engine.FileResult{Path: "go/src/b.go", Size: 99, Verified: true, Root: "00ee", Kept: true}),
		ev(engine.FileResult{Path: "ctl\x01\t\n\x7f", Err: "the file's BLAKE3 root does not match", Size: -1}),
		ev(engine.FileResult{Path: "bad\xff\xfeutf8 \u2028\u2029 é 日本"}),
		ev(engine.FileResult{}),
	}
	odd := []time.Time{
		{},
		when.In(time.FixedZone("x", -(5*3600 + 30*60))),
		when.In(time.FixedZone("s", 17)),             // seconds in the zone
		when.In(time.FixedZone("d", 25*3600)),        // encoding/json refuses it
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), // likewise
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // a monotonic reading, which JSON leaves out
		when.Truncate(time.Second),
	}
	for _, t := range odd {
		e := ev(engine.FileResult{Path: "x", Verified: true})
		e.Time = t
		evs = append(evs, e)
	}
	other := ev(engine.FileResult{Path: "p"})
	other.Progress = &engine.Progress{}
	notFile := ev(engine.FileResult{Path: "p"})
	notFile.Kind = engine.EventState
	otherPeer := ev(engine.FileResult{Path: "p"})
	otherPeer.Peer.Name, otherPeer.Delivery = "other", ""
	return append(evs, other, notFile, otherPeer, ev(engine.FileResult{Path: "again"}))
}

// The printer's file lines are exactly what json.Encoder writes, event
// after event (the kept part follows a change of peer, transfer, state).
func TestFileLineSameAsEncoder(t *testing.T) {
	var want, got bytes.Buffer
	enc := json.NewEncoder(&want)
	p := newPrinter(&got, true)
	for i, ev := range fileLineEvents() {
		want.Reset()
		got.Reset()
		err := enc.Encode(ev)
		p.event(ev)
		if err != nil {
			want.Reset() // encoding/json refused it: so does the printer
		}
		if got.String() != want.String() {
			t.Errorf("event %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
}

func FuzzFileLine(f *testing.F) {
	for _, ev := range fileLineEvents() {
		f.Add(ev.File.Path, ev.File.SavedAs, ev.File.Err, ev.Peer.Name, ev.File.Size, ev.Time.UnixNano(), 0)
	}
	f.Fuzz(func(t *testing.T, path, saved, errText, peer string, size, unixNano int64, zone int) {
		ev := fileLineEvents()[0]
		ev.File = &engine.FileResult{Path: path, SavedAs: saved, Err: errText, Size: size, Verified: size%2 == 0, Root: peer}
		ev.Peer.Name = peer
		ev.Time = time.Unix(0, unixNano).In(time.FixedZone("z", zone%(30*3600)))
		var want, got bytes.Buffer
		if err := json.NewEncoder(&want).Encode(ev); err != nil {
			want.Reset()
		}
		newPrinter(&got, true).event(ev)
		if got.String() != want.String() {
			t.Errorf("got  %s\nwant %s", got.String(), want.String())
		}
	})
}

// A receiver prints a file event per file: with --json it costs no
// allocation (json.Encoder: two, and its reflection over the whole Event).
func TestFileLineAllocations(t *testing.T) {
	ev := fileLineEvents()[0]
	p := newPrinter(io.Discard, true)
	p.event(ev) // the kept part, once
	if allocs := testing.AllocsPerRun(100, func() { p.event(ev) }); allocs > 0 {
		t.Errorf("a file's JSON line: %.0f allocations, want 0", allocs)
	}
}

// BenchmarkFileLine: a --json file line as the receiver printed it before
// (json.Encoder on the whole Event) and as it does now.
func BenchmarkFileLine(b *testing.B) {
	ev := fileLineEvents()[0]
	b.Run("json.Encoder", func(b *testing.B) {
		enc := json.NewEncoder(io.Discard)
		b.ReportAllocs()
		for b.Loop() {
			enc.Encode(ev)
		}
	})
	b.Run("printer", func(b *testing.B) {
		p := newPrinter(io.Discard, true)
		b.ReportAllocs()
		for b.Loop() {
			p.event(ev)
		}
	})
}
