package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/ui"
)

// DefaultPort is the port the app listens on (UDP for QUIC and TCP) when it
// is free: a saved address, a shared link and a firewall rule keep working
// across starts (issue 26, finding 9). The CLI's receive uses the same.
const DefaultPort = ui.DefaultPort

// portFile keeps the port the app listened on last, for when DefaultPort is
// taken (another Ferry, another program).
const portFile = "listen-port"

// portChoice is the port the app will listen on and why, in words for the
// status line.
type portChoice struct {
	Port int // 0: any free port
	Why  string
}

// choosePort picks the port to listen on: DefaultPort when both UDP and TCP
// can bind it, else the last port used (saved in dir) when free, else any
// free port. free reports whether a port can be bound for both; tests
// replace it.
func choosePort(dir string, free func(port int) bool) portChoice {
	if free(DefaultPort) {
		return portChoice{Port: DefaultPort, Why: fmt.Sprintf("the default port %d", DefaultPort)}
	}
	last, err := readLastPort(dir)
	if err == nil && last != DefaultPort && free(last) {
		return portChoice{Port: last, Why: fmt.Sprintf("port %d, the last one used (%d is taken)", last, DefaultPort)}
	}
	return portChoice{Why: fmt.Sprintf("a free port (%d is taken)", DefaultPort)}
}

// readLastPort reads the port saved by saveLastPort.
func readLastPort(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, portFile))
	if err != nil {
		return 0, fmt.Errorf("read last port: %w", err)
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("read last port: %w", errBadPort)
	}
	return p, nil
}

var errBadPort = errors.New("not a port number")

// saveLastPort remembers the port the app listens on.
func saveLastPort(dir string, port int) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("save last port: %w", errBadPort)
	}
	if err := atomicfile.Write(filepath.Join(dir, portFile), []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return fmt.Errorf("save last port: %w", err)
	}
	return nil
}

// portFree reports whether both a UDP and a TCP socket can bind port on all
// addresses right now. The listeners bind it a moment later: a program that
// takes the port in between makes the engine fall back as for any taken port.
func portFree(port int) bool {
	addr := ":" + strconv.Itoa(port)
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	defer u.Close()
	t, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	t.Close()
	return true
}
