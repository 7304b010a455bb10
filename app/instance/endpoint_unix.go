//go:build unix

package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

const socketName = "ferry.sock"

// maxSocketPath keeps below sun_path's size (108 bytes on Linux, 104 on macOS).
const maxSocketPath = 100

// socketPath is the Unix socket of dir's instance: in dir itself, or, when
// that path is too long for a socket address, in a private per-user
// directory under the runtime dir, named after dir's hash.
func socketPath(dir string) (string, error) {
	p := filepath.Join(dir, socketName)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	priv := filepath.Join(base, fmt.Sprintf("ferry-%d", os.Getuid()))
	if err := os.MkdirAll(priv, 0o700); err != nil {
		return "", err
	}
	// A shared /tmp: the directory must be ours and private, not planted.
	fi, err := os.Lstat(priv)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a private directory of this user", priv)
	}
	sum := sha256.Sum256([]byte(dir))
	p = filepath.Join(priv, hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("socket path %s is too long", p)
	}
	return p, nil
}

// listen opens dir's socket. The caller holds the lock, so a socket file
// left there is stale (its process died) and is replaced.
func listen(dir string) (net.Listener, string, error) {
	p, err := socketPath(dir)
	if err != nil {
		return nil, "", err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, "", err
	}
	// Only this user may hand requests over (the config dir is private
	// too; the runtime-dir fallback may not be).
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, "", nil
}

// dial connects to dir's socket.
func dial(ctx context.Context, dir string) (net.Conn, string, error) {
	p, err := socketPath(dir)
	if err != nil {
		return nil, "", err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p)
	return c, "", err
}

// cleanup: the listener removed its socket file when it closed.
func cleanup(string) {}
