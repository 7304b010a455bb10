//go:build !linux

package auto

// tcpFasterOnCleanPaths: without UDP GSO (macOS, Windows) QUIC pays one
// syscall per datagram, so TCP wins clean paths by an even wider margin.
const tcpFasterOnCleanPaths = true
