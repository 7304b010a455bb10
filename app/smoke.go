package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/ui"
)

// Hooks for scripts/gui-smoke.sh and the GUI end-to-end test only. They do
// nothing unless their environment variable is set. They stand in for
// mDNS, which a test cannot count on.
//
//	FERRY_SMOKE_STATUS=file     write {"id","name","quic","tcp"} once receiving
//	FERRY_SMOKE_SEND=addr=path  add the device at addr, then send path to it
//	FERRY_SMOKE_ADD=addr[,addr] add the devices at these addresses (rows to drop
//	                            files on); with FERRY_SMOKE_STATUS, write
//	                            file.added after them
//	FERRY_SMOKE_ISOLATED=1      no mDNS: neither see nor be seen by other Ferrys
//	                            on the network (the device list is the test's);
//	                            LocalSend on loopback only, without multicast
//	FERRY_SMOKE_LINK=share=PATH[:PIN] or receive[:PIN]
//	                            open a browser link and show it; its URL goes
//	                            to the status file's ".link"
//	FERRY_SMOKE_SEND_TO=name=path  once discovery lists a device called name
//	                            (a LocalSend phone, say), send path to it as
//	                            a drop on its row would
//	FERRY_SMOKE_DESCRIBE=file   keep file up to date with what the window shows
//	                            (ui.Described: rows' words, buttons' places)
//	FERRY_SMOKE_RETRY_FOR=dur   how long a sender keeps reconnecting (the
//	                            engine's RetryFor; default 2 minutes)
//	FERRY_SMOKE_LOG=info|debug  log more than warnings (to stderr)
const (
	envSmokeStatus   = "FERRY_SMOKE_STATUS"
	envSmokeSend     = "FERRY_SMOKE_SEND"
	envSmokeAdd      = "FERRY_SMOKE_ADD"
	envSmokeIsolated = "FERRY_SMOKE_ISOLATED"
	envSmokeLink     = "FERRY_SMOKE_LINK"
	envSmokeSendTo   = "FERRY_SMOKE_SEND_TO"
	envSmokeDescribe = "FERRY_SMOKE_DESCRIBE"
	envSmokeRetryFor = "FERRY_SMOKE_RETRY_FOR"
)

// smokeLogLevel is FERRY_SMOKE_LOG's level, else warnings only.
func smokeLogLevel() slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(os.Getenv("FERRY_SMOKE_LOG"))) != nil || os.Getenv("FERRY_SMOKE_LOG") == "" {
		return slog.LevelWarn
	}
	return l
}

// smokeRetryFor is FERRY_SMOKE_RETRY_FOR, or zero (the engine's default).
func smokeRetryFor() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(envSmokeRetryFor))
	return d
}

// smokeDescribe writes what the window shows to file whenever it changes,
// until ctx ends. It reads the window every 100 ms: a test hook, never run
// for a user.
func smokeDescribe(ctx context.Context, u *ui.UI, file string) {
	var last []byte
	for {
		var d ui.Described
		if !ui.DoAndWait(ctx, func() { d = u.Describe() }) {
			return // the app quits
		}
		if data, err := json.Marshal(d); err == nil && string(data) != string(last) {
			if writeFileAtomic(file, data) == nil {
				last = data
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// smokeIsolate keeps discovery and the advertisement off the network when
// FERRY_SMOKE_ISOLATED is set; it returns the advertisement's options.
func smokeIsolate(o *discovery.Options) []discovery.AdvertiseOption {
	if os.Getenv(envSmokeIsolated) == "" {
		return nil
	}
	none := func() ([]net.Interface, error) { return nil, nil }
	o.Interfaces = none
	return []discovery.AdvertiseOption{discovery.WithInterfaceLister(none)}
}

// smokeIsolated reports whether FERRY_SMOKE_ISOLATED keeps the app off the network.
func smokeIsolated() bool { return os.Getenv(envSmokeIsolated) != "" }

// smokeListen is the address chosen by choose, or any free loopback port
// when FERRY_SMOKE_ISOLATED is set: a test's instances never take (or
// probe) the app's fixed port, from each other or from a Ferry running on
// the same machine.
func smokeListen(choose func() string) string {
	if os.Getenv(envSmokeIsolated) == "" {
		return choose()
	}
	return "127.0.0.1:0"
}

func smokeHooks(ctx context.Context, b *backend, u *ui.UI) error {
	if f := os.Getenv(envSmokeDescribe); f != "" {
		go smokeDescribe(ctx, u, f)
	}
	if f := os.Getenv(envSmokeStatus); f != "" {
		// Written from the Fyne loop, so the window is up (or stays hidden) by then.
		if !ui.DoAndWait(ctx, func() {}) {
			return ctx.Err()
		}
		st := map[string]string{"id": b.eng.ID(), "name": b.eng.Name()}
		for _, l := range b.eng.Listeners() { // "quic" and "tcp": where each listens, "" when it does not
			st[l.Transport] = l.Addr
		}
		data, _ := json.Marshal(st)
		if err := writeFileAtomic(f, data); err != nil {
			return fmt.Errorf("smoke status: %w", err)
		}
	}
	if addrs := os.Getenv(envSmokeAdd); addrs != "" {
		var ids []string
		for _, addr := range strings.Split(addrs, ",") {
			dev, err := smokeAdd(ctx, b, u, addr)
			if err != nil {
				return fmt.Errorf("smoke add: %w", err)
			}
			ids = append(ids, dev.ID)
		}
		if f := os.Getenv(envSmokeStatus); f != "" {
			// Tell the test the rows are there to drop files on.
			if !ui.DoAndWait(ctx, func() {}) {
				return ctx.Err()
			}
			data, _ := json.Marshal(map[string]string{"added": strings.Join(ids, ",")})
			if err := writeFileAtomic(f+".added", data); err != nil {
				return fmt.Errorf("smoke add: %w", err)
			}
		}
	}
	if spec := os.Getenv(envSmokeSendTo); spec != "" {
		if err := smokeSendTo(ctx, b, spec); err != nil {
			return fmt.Errorf("smoke send to: %w", err)
		}
	}
	if spec := os.Getenv(envSmokeLink); spec != "" {
		if err := smokeLink(b, u, spec); err != nil {
			return fmt.Errorf("smoke link: %w", err)
		}
	}
	spec := os.Getenv(envSmokeSend)
	if spec == "" {
		return nil
	}
	addr, path, ok := strings.Cut(spec, "=")
	if !ok {
		return errors.New("smoke send: want addr=path")
	}
	dev, err := smokeAdd(ctx, b, u, addr)
	if err != nil {
		return fmt.Errorf("smoke send: %w", err)
	}
	return b.Send(dev, ui.Items{Paths: []string{path}})
}

// smokeAdd adds the device at addr to the list, retrying while it starts.
func smokeAdd(ctx context.Context, b *backend, u *ui.UI, addr string) (ui.Device, error) {
	var dev ui.Device
	var err error
	for i := 0; i < 20; i++ {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		dev, err = b.AddDevice(actx, addr, "")
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // retry pacing, not a readiness wait
		}
	}
	if err != nil {
		return ui.Device{}, err
	}
	ui.Do(func() { u.ApplyDevice(ui.DeviceEvent{Kind: ui.DeviceAppeared, Device: dev}) })
	return dev, nil
}

// smokeLink opens a browser link as "Create link" does ("share=PATH[,PATH]"
// or "receive", with ":PIN" after either) and writes its URL to the status
// file's ".link" for the test to open.
func smokeLink(b *backend, u *ui.UI, spec string) error {
	spec, pin, _ := strings.Cut(spec, ":")
	req := ui.LinkRequest{Kind: ui.LinkReceive, PIN: pin}
	if paths, ok := strings.CutPrefix(spec, "share="); ok {
		req = ui.LinkRequest{Kind: ui.LinkShare, Paths: strings.Split(paths, ","), PIN: pin}
	}
	states, err := b.OpenLink(context.Background(), req)
	if err != nil {
		return err
	}
	first := <-states
	if f := os.Getenv(envSmokeStatus); f != "" {
		if err := writeFileAtomic(f+".link", []byte(first.URL)); err != nil {
			return err
		}
	}
	ui.Do(func() { u.ShowOpenLink(first, states) })
	return nil
}

// smokeSendTo waits (up to a minute) for discovery to list the device
// named in "name=path", then sends path to it through the backend, as a
// drop on its row does.
func smokeSendTo(ctx context.Context, b *backend, spec string) error {
	name, path, ok := strings.Cut(spec, "=")
	if !ok {
		return errors.New("want name=path")
	}
	for i := 0; i < 120; i++ {
		for _, p := range b.disc.Peers() {
			if d := toUIDevice(p, b.trust(p.ID), true); d.Name == name {
				return b.Send(b.named(d), ui.Items{Paths: []string{path}})
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond): // polling the table, not a readiness wait
		}
	}
	return fmt.Errorf("no device called %q appeared", name)
}
