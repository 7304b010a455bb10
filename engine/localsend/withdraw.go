package localsend

import "fmt"

// errNotReceiving refuses offers while the server is withdrawn (403: the
// protocol has no code for "not receiving now").
var errNotReceiving = fmt.Errorf("%w: not receiving now", ErrDeclined)

// Withdraw stops taking offers: a prepare-upload is answered 403 while the
// offers being decided and the sessions running go on to their end (their
// uploads still come in). idle is called once, in a goroutine of its own,
// when the last of them has ended (at once when none runs): the caller
// then closes the server, releasing its socket. Resume undoes it.
func (s *Server) Withdraw(idle func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn, s.onIdle, s.released = true, idle, false
	s.checkIdleLocked()
}

// Resume takes offers again after Withdraw; false when idle was called
// meanwhile (the socket is, or is about to be, released).
func (s *Server) Resume() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released || s.closed {
		return false
	}
	s.withdrawn, s.onIdle = false, nil
	return true
}

// checkIdle calls a withdrawn server's idle when nothing runs any more.
func (s *Server) checkIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkIdleLocked()
}

func (s *Server) checkIdleLocked() {
	if !s.withdrawn || s.onIdle == nil || len(s.pending)+len(s.sessions) > 0 {
		return
	}
	idle := s.onIdle
	s.onIdle, s.released = nil, true
	go idle()
}
