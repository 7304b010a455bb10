package auto

import "github.com/ferrydrop/ferry/engine/internal/transport"

// PathChanges forwards the QUIC session's path changes
// (transport.PathReporter): its connection migrates whichever transport
// carries the data.
func (a *switchConn) PathChanges() <-chan transport.PathChange {
	if pr, ok := a.Conn.(transport.PathReporter); ok {
		return pr.PathChanges()
	}
	return nil
}

// PathLost forwards the QUIC session's (transport.PathLoser).
func (a *switchConn) PathLost() <-chan struct{} {
	if pl, ok := a.Conn.(transport.PathLoser); ok {
		return pl.PathLost()
	}
	return nil
}
