// Command lspeerd runs the independent LocalSend test peer (package lspeer)
// as a program, for scripts that need a LocalSend device on a network they
// made (scripts/gui-reach.sh runs it inside a network namespace): it serves
// LocalSend's API over HTTPS, announces itself on one interface every
// couple of seconds, answers announcements with a register, and with -send
// offers a file to the first device it hears of. It is a test tool, not a
// LocalSend app: never run it on a real network you share.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ferrydrop/ferry/internal/lspeer"
)

func main() {
	alias := flag.String("alias", "Galaxy S24", "the name it announces")
	model := flag.String("model", "Samsung", "its device model")
	kind := flag.String("type", "mobile", "its device type (mobile, desktop, web, headless, server)")
	iface := flag.String("iface", "", "the interface to announce on (required)")
	port := flag.Int("port", 53317, "its HTTPS port and LocalSend's multicast port")
	send := flag.String("send", "", "a `FILE` to offer to the first device heard of")
	flag.Parse()
	if err := run(*alias, *model, *kind, *iface, *port, *send); err != nil {
		fmt.Fprintln(os.Stderr, "lspeerd:", err)
		os.Exit(1)
	}
}

func run(alias, model, kind, iface string, port int, send string) error {
	if iface == "" {
		return fmt.Errorf("-iface is required")
	}
	p, err := lspeer.New(alias)
	if err != nil {
		return err
	}
	p.DeviceModel, p.DeviceType, p.Port = model, kind, port
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	go func() { _ = p.Serve(ln) }()
	defer p.Close()
	m, err := p.ListenMulticast(iface, port)
	if err != nil {
		return err
	}
	m.AnswerWithRegister = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _ = m.Run(ctx) }()
	fmt.Printf("lspeerd: %s (%s) on %s port %d, fingerprint %s\n", alias, model, iface, port, p.Fingerprint)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	told := map[string]bool{}
	for {
		_ = m.Announce()
		got, _, _, _, _, _ := p.Snapshot()
		for name, data := range got {
			if !told[name] {
				told[name] = true
				fmt.Printf("lspeerd: received %s (%d bytes)\n", name, len(data))
			}
		}
		if send != "" {
			if to, fp, ok := heardServer(m); ok {
				data, err := os.ReadFile(send)
				if err != nil {
					return err
				}
				name := filepath.Base(send)
				go func() { // the offer waits for the user's answer; announcing goes on
					sr, err := p.Send(ctx, to, fp, true, "", "", []lspeer.SendFile{{Name: name, Data: data}}, nil)
					if err != nil {
						fmt.Println("lspeerd: send:", err)
						return
					}
					fmt.Println("lspeerd: sent, prepare-upload answered", sr.PrepareStatus)
				}()
				send = ""
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// heardServer is the first device heard that runs a LocalSend server.
func heardServer(m *lspeer.Multicast) (addr, fingerprint string, ok bool) {
	for _, h := range m.Heard() {
		port, _ := h.Msg["port"].(float64)
		fp, _ := h.Msg["fingerprint"].(string)
		if port > 0 && fp != "" {
			return net.JoinHostPort(h.From, strconv.Itoa(int(port))), fp, true
		}
	}
	return "", "", false
}
