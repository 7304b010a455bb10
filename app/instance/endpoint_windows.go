//go:build windows

package instance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// endpointName holds the loopback port and the token of dir's instance.
// Any local user can reach a loopback port; only users who can read the
// config dir know the token.
const endpointName = "instance.json"

type endpoint struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

func listen(dir string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		ln.Close()
		return nil, "", err
	}
	ep := endpoint{Addr: ln.Addr().String(), Token: hex.EncodeToString(b)}
	data, err := json.Marshal(ep)
	if err == nil {
		err = atomicfile.Write(filepath.Join(dir, endpointName), data, 0o600)
	}
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, ep.Token, nil
}

func dial(ctx context.Context, dir string) (net.Conn, string, error) {
	data, err := os.ReadFile(filepath.Join(dir, endpointName))
	if err != nil {
		return nil, "", err
	}
	var ep endpoint
	if err := json.Unmarshal(data, &ep); err != nil {
		return nil, "", fmt.Errorf("%s: %w", endpointName, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ep.Addr)
	return c, ep.Token, err
}

// cleanup removes the endpoint file so a later launch does not dial a port
// some other program may own by then.
func cleanup(dir string) { _ = os.Remove(filepath.Join(dir, endpointName)) }
