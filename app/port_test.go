package app

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestChoosePort(t *testing.T) {
	cases := []struct {
		name  string
		saved string // the listen-port file's content, "" for none
		taken []int
		want  int
	}{
		{name: "default free", saved: "51234", want: DefaultPort},
		{name: "default taken, last free", saved: "51234", taken: []int{DefaultPort}, want: 51234},
		{name: "both taken", saved: "51234", taken: []int{DefaultPort, 51234}, want: 0},
		{name: "nothing saved", taken: []int{DefaultPort}, want: 0},
		{name: "garbage saved", saved: "port", taken: []int{DefaultPort}, want: 0},
		{name: "out of range saved", saved: "70000", taken: []int{DefaultPort}, want: 0},
		{name: "negative saved", saved: "-1", taken: []int{DefaultPort}, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.saved != "" {
				if err := os.WriteFile(filepath.Join(dir, portFile), []byte(tc.saved), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			free := func(p int) bool {
				for _, x := range tc.taken {
					if x == p {
						return false
					}
				}
				return true
			}
			got := choosePort(dir, free)
			if got.Port != tc.want || got.Why == "" {
				t.Fatalf("choosePort = %+v, want port %d with a reason", got, tc.want)
			}
		})
	}
}

func TestLastPortRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := readLastPort(dir); err == nil {
		t.Fatal("read a port that was never saved")
	}
	if err := saveLastPort(dir, 0); !errors.Is(err, errBadPort) {
		t.Fatalf("save 0: %v, want errBadPort", err)
	}
	if err := saveLastPort(dir, 51234); err != nil {
		t.Fatal(err)
	}
	if p, err := readLastPort(dir); err != nil || p != 51234 {
		t.Fatalf("read = %d, %v", p, err)
	}
}

// A port another program listens on (here on loopback) is not free.
func TestPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if portFree(port) {
		t.Errorf("port %d held by a TCP listener reported free", port)
	}
	l.Close()
}
