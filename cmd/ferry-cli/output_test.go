package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine"
)

// A held printer writes nothing until flush, then every line in order, the
// same lines an unheld one writes at once.
func TestPrinterHoldsUntilFlush(t *testing.T) {
	events := []engine.Event{
		{Kind: engine.EventFile, File: &engine.FileResult{Path: "a.txt", Size: 1, Verified: true}},
		{Kind: engine.EventFile, File: &engine.FileResult{Path: "b/c.txt", Size: 2, Verified: false, Err: "bad"}},
	}
	for _, asJSON := range []bool{true, false} {
		var direct, held bytes.Buffer
		d := newPrinter(&direct, asJSON)
		h := newPrinter(&held, asJSON)
		h.hold()
		for _, ev := range events {
			d.event(ev)
			h.event(ev)
		}
		if held.Len() != 0 {
			t.Fatalf("json=%v: a held printer wrote %q before flush", asJSON, held.String())
		}
		h.flush()
		if held.String() != direct.String() || direct.Len() == 0 {
			t.Errorf("json=%v: held printer wrote %q, unheld %q", asJSON, held.String(), direct.String())
		}
		if asJSON {
			for _, line := range strings.Split(strings.TrimSpace(held.String()), "\n") {
				var ev engine.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.File == nil {
					t.Errorf("line %q: %v", line, err)
				}
			}
		}
	}
}
