package anywhere

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
)

// A connection the relay closed is lost on the way, however net/http says
// it: its own word for one closed before the request was read is neither
// a net.Error nor EOF, and was taken for an answer in another protocol
// ("is not a Ferry relay: it answers, but not in HTTP"; 1 in 1000 tries
// of a relay that closes each connection at once).
func TestLostOnTheWay(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{errors.New("http: server closed idle connection"), true},
		{errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.2"`), false},
	} {
		if got := lostOnTheWay(c.err); got != c.lost {
			t.Errorf("lostOnTheWay(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
