package engine

// tcpFasterOnCleanPaths: measured on Linux loopback with GSO, TLS over kernel
// TCP moves about 2-3x the bytes per second of a quic-go stream (ferry-bench loopback).
const tcpFasterOnCleanPaths = true
