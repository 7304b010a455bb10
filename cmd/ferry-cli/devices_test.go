package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// devices lists the trust store (a paired device with its short ID and
// last address; --json one object per line) and --forget takes a device
// out of it, by name or ID; a name two devices bear is refused with their
// IDs.
func TestDevices(t *testing.T) {
	answerYes(t)
	pcfg := t.TempDir()
	rcfg := t.TempDir()
	r := startReceiver(t, rcfg, "--accept", "trusted", "--no-discovery")
	if code, _, stderr := runCLI(t, "pair", "--config", pcfg, "--to", r.quic, "--name", "laptop"); code != 0 {
		t.Fatalf("pairing: %s", stderr)
	}
	name := nameOf(t, rcfg)

	code, stdout, stderr := runCLI(t, "devices", "--config", pcfg)
	if code != 0 {
		t.Fatalf("devices: exit %d, %s", code, stderr)
	}
	line := ""
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, short(r.id)) {
			line = l
		}
	}
	if !strings.HasPrefix(stdout, "NAME") || !strings.Contains(line, name) || !strings.Contains(line, "paired") || !strings.Contains(line, r.quic) {
		t.Fatalf("devices: %q", stdout)
	}

	code, stdout, _ = runCLI(t, "devices", "--config", pcfg, "--json")
	var d map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &d); code != 0 || err != nil {
		t.Fatalf("devices --json: exit %d, %v: %q", code, err, stdout)
	}
	if d["id"] != r.id || d["name"] != name || d["status"] != "paired" || d["paired"] != true || d["last_addr"] != r.quic || d["last_seen"] == nil {
		t.Fatalf("devices --json: %q", stdout)
	}

	code, stdout, stderr = runCLI(t, "devices", "--config", pcfg, "--forget", name)
	if code != 0 || !strings.Contains(stdout, "Forgot "+name+" ("+short(r.id)+"), paired until now") {
		t.Fatalf("devices --forget NAME: exit %d, %q %q", code, stdout, stderr)
	}
	if trusts(t, pcfg, r.id) {
		t.Fatal("the device forgotten is still trusted")
	}
	if code, _, stderr = runCLI(t, "devices", "--config", pcfg, "--forget", name); code != 1 || !strings.Contains(stderr, "no remembered device") {
		t.Fatalf("forgetting it again: exit %d, %q", code, stderr)
	}
}

func TestDevicesForgetAmbiguousName(t *testing.T) {
	cfg := t.TempDir()
	a, b := idOf(t, t.TempDir()), idOf(t, t.TempDir())
	now := time.Now().UTC()
	store, _ := json.Marshal([]map[string]any{
		{"id": a, "name": "Desktop", "first_seen": now, "last_seen": now, "always_accept": true, "paired": true},
		{"id": b, "name": "desktop", "first_seen": now, "last_seen": now.Add(-time.Hour), "always_accept": false},
	})
	if err := os.WriteFile(filepath.Join(cfg, "trust.json"), store, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "devices", "--config", cfg, "--forget", "Desktop")
	if code != 1 || !strings.Contains(stderr, "2 remembered devices are called \"Desktop\", with the IDs "+short(a)+", "+short(b)) {
		t.Fatalf("an ambiguous name: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "devices", "--config", cfg, "--forget", short(b))
	if code != 0 || !strings.Contains(stdout, "Forgot desktop ("+short(b)+"), a device known here") {
		t.Fatalf("--forget ID: exit %d, %q %q", code, stdout, stderr)
	}
	_, stdout, _ = runCLI(t, "devices", "--config", cfg)
	if !strings.Contains(stdout, short(a)) || strings.Contains(stdout, short(b)) {
		t.Fatalf("after forgetting %s: %q", short(b), stdout)
	}
}

// nameOf is the name of the device with config cfg.
func nameOf(t *testing.T, cfg string) string {
	t.Helper()
	e, err := engine.New(engine.Options{ConfigDir: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.Name()
}

// A device forgotten while a receiver runs on the same config stays
// forgotten: the receiver wrote its own list, which still had it, back at
// its next contact with another device.
func TestForgetWhileReceiving(t *testing.T) {
	rcfg := t.TempDir()
	r := startReceiver(t, rcfg, "--accept", "all", "--no-discovery")
	acfg, bcfg := t.TempDir(), t.TempDir()
	src := writeFile(t, "a.txt", "a")
	if code, _, stderr := runCLI(t, "send", "--config", acfg, "--name", "laptop", "--to", r.quic, src); code != 0 {
		t.Fatalf("send from laptop: %s", stderr)
	}
	if code, stdout, stderr := runCLI(t, "devices", "--config", rcfg, "--forget", "laptop"); code != 0 {
		t.Fatalf("devices --forget laptop: exit %d, %q %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "send", "--config", bcfg, "--name", "phone", "--to", r.quic, src); code != 0 {
		t.Fatalf("send from phone: %s", stderr)
	}
	if code := r.stop(); code != 0 {
		t.Fatalf("receive: exit %d, %s", code, r.errOut)
	}
	_, stdout, _ := runCLI(t, "devices", "--config", rcfg)
	if strings.Contains(stdout, short(idOf(t, acfg))) || !strings.Contains(stdout, short(idOf(t, bcfg))) {
		t.Fatalf("after forgetting laptop while receiving, then a send from phone:\n%s", stdout)
	}
}
