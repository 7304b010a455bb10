//go:build linux

package netlab_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// A 120 ms, 2 %-loss, 100 Mbit/s path for an in-process server and client,
// plus a second path to migrate to. Needs root.
func Example() {
	ctx := context.Background()
	lab, err := netlab.New(ctx, netlab.Config{Paths: []netlab.PathConfig{{Name: "wifi"}, {Name: "cellular"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer lab.Close()
	lab.SetImpairment("wifi", netlab.Both, netlab.Impairment{Delay: 60 * time.Millisecond, Rate: 100e6})
	lab.SetImpairment("wifi", netlab.SenderToReceiver, netlab.Impairment{Delay: 60 * time.Millisecond, Rate: 100e6, Loss: 0.02})

	// Sockets made through the lab live in its namespaces.
	srv, err := lab.ListenUDP(netlab.Receiver, netip.AddrPortFrom(lab.MustAddr(netlab.Receiver, "wifi"), 0))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// A client socket bound to the cellular address uses the cellular path,
	// even towards the server's wifi address.
	cli, err := lab.ListenUDP(netlab.Sender, netip.AddrPortFrom(lab.MustAddr(netlab.Sender, "cellular"), 0))
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	// External programs run inside a namespace.
	out, err := lab.Command(ctx, netlab.Sender, "ip", "route").Output()
	fmt.Println(string(out), err)

	lab.Cut("wifi") // and later lab.Restore("wifi")
	fmt.Println(lab.Stats()[0].SenderToReceiver.Delivered)
}
