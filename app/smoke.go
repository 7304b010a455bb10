package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui"
)

// Hooks for scripts/gui-smoke.sh only. They do nothing unless their
// environment variable is set.
//
//	FERRY_SMOKE_STATUS=file     write {"id","name","quic","tcp"} once receiving
//	FERRY_SMOKE_SEND=addr=path  add the device at addr, then send path to it
const (
	envSmokeStatus = "FERRY_SMOKE_STATUS"
	envSmokeSend   = "FERRY_SMOKE_SEND"
)

func smokeHooks(ctx context.Context, b *backend, u *ui.UI) error {
	if f := os.Getenv(envSmokeStatus); f != "" {
		// Written from the Fyne loop, so the window is up (or stays hidden) by then.
		fyne.DoAndWait(func() {})
		q, t := b.eng.Addrs()
		st := map[string]string{"id": b.eng.ID(), "name": b.eng.Name(), "quic": q, "tcp": t}
		data, _ := json.Marshal(st)
		if err := writeFileAtomic(f, data); err != nil {
			return fmt.Errorf("smoke status: %w", err)
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
	var dev ui.Device
	var err error
	for i := 0; i < 20; i++ {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		dev, err = b.AddDevice(actx, addr)
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
		return fmt.Errorf("smoke send: %w", err)
	}
	fyne.Do(func() { u.ApplyDevice(ui.DeviceEvent{Kind: ui.DeviceAppeared, Device: dev}) })
	return b.Send(dev, []string{path})
}
