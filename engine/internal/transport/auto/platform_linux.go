package auto

// tcpFasterOnCleanPaths: measured on Linux loopback with GSO, TLS over kernel
// TCP moves more bytes per second than a quic-go stream (ferry-bench loopback).
const tcpFasterOnCleanPaths = true
