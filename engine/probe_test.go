package engine

import (
	"context"
	"errors"
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

// A device added by its address is remembered there (looked for there
// after a restart); one that is not the device asked for, or is this
// device, is not remembered.
func TestAddDeviceRemembersItsAddress(t *testing.T) {
	recv := startReceiver(t, Options{Name: "desk"})
	e := testEngine(t, Options{})
	addr := recv.Addrs()[0].HostPort()
	if _, err := e.AddDevice(context.Background(), addr, "FERRY-SOMEONE-ELSE"); !errors.Is(err, ErrOtherDevice) {
		t.Fatalf("another device asked for: %v", err)
	}
	if len(e.Trusted()) != 0 {
		t.Fatalf("remembered %+v, which was not the device asked for", e.Trusted())
	}
	info, err := e.AddDevice(context.Background(), addr, recv.ID())
	if err != nil || info.ID != recv.ID() {
		t.Fatalf("AddDevice: %+v, %v", info, err)
	}
	if ts := e.Trusted(); len(ts) != 1 || ts[0].ID != recv.ID() || ts[0].Name != "desk" || ts[0].LastAddr != addr || ts[0].AlwaysAccept {
		t.Fatalf("remembered %+v, want desk at %s, not trusted", ts, addr)
	}
	self := startReceiver(t, Options{})
	if _, err := self.AddDevice(context.Background(), self.Addrs()[0].HostPort(), ""); !errors.Is(err, ErrThisDevice) {
		t.Fatalf("this device's own address: %v", err)
	}
	if ts := self.Trusted(); len(ts) != 0 {
		t.Fatalf("this device remembered itself: %+v", ts)
	}
}
