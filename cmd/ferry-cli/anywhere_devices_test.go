package main

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
)

// Devices paired for reaching each other beyond the LAN, for the tests
// of send --relay and receive --anywhere.

// device is a configuration directory with its identity.
type device struct {
	name, dir string
	id        identity.DeviceID
}

func newDevice(t testing.TB, name string) device {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	id, err := identity.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return device{name: name, dir: dir, id: id.ID}
}

// pairAnywhere records a and b as paired, with a rendezvous secret, in
// a's trust store (and b's, unless oneSided): what pairing on the LAN
// leaves behind (pairing itself is tested in package engine).
func pairAnywhere(t testing.TB, a, b device, oneSided bool) {
	pairAnywhereAt(t, a, b, oneSided, "")
}

// pairAnywhereAt is pairAnywhere with the address a last reached b at.
func pairAnywhereAt(t testing.TB, a, b device, oneSided bool, bAt string) {
	t.Helper()
	var raw [32]byte
	rand.Read(raw[:])
	secret := hex.EncodeToString(raw[:])
	sides := [][2]device{{a, b}, {b, a}}
	if oneSided {
		sides = sides[:1]
	}
	for _, s := range sides {
		st, err := identity.OpenStore(s[0].dir)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		at := ""
		if s[0] == a {
			at = bAt
		}
		if err := st.Pair(s[1].id.Peer(), s[1].name, at, now); err != nil {
			t.Fatal(err)
		}
		if err := st.SetRendezvous(s[1].id.Peer(), secret, now); err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}
