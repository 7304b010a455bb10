package app

import (
	"net"
	"strconv"
)

// port returns the port number of "host:port", or 0.
func port(hostport string) int {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
