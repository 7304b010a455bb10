package engine

import (
	"context"
	"testing"
	"time"
)

func TestProbeLeavesNoTrace(t *testing.T) {
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{Name: "desk", NoListen: onlyListen(tp)})
			events, unsub := recv.Subscribe(16)
			defer unsub()
			prober := testEngine(t, Options{})
			addr := recv.Addrs()[0].HostPort()
			info, err := prober.Probe(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			if info.ID != recv.ID() || info.Name != "desk" {
				t.Fatalf("probe found %+v", info)
			}
			select {
			case ev := <-events:
				t.Fatalf("the probe raised an event: %+v", ev)
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
	if _, err := testEngine(t, Options{}).Probe(context.Background(), "127.0.0.1:1"); err == nil {
		t.Fatal("probe of a closed port succeeded")
	}
}
