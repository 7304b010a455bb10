//go:build !linux

package quic

// groReader: only Linux receives with UDP GRO (gro_linux.go).
type groReader struct{}

func (c *countingUDP) enableGRO() {}

func (c *countingUDP) receiveCounts() (calls, datagrams int64) { return 0, 0 }

func (c *countingUDP) groOn() bool { return false }
