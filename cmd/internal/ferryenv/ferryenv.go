// Package ferryenv maps the FERRY_* environment variables that tune the
// engine onto its configuration. Only commands read the environment: the
// engine takes everything through engine.Options.
//
//	FERRY_QUIC_IDLE_TIMEOUT  Go duration  TransportConfig.QUICIdleTimeout (tests, the lab)
//	FERRY_QUIC_CONNS         integer > 0  TransportConfig.QUICConns (1 turns QUIC's extra connections off)
//	FERRY_MAX_FLOWS          integer > 0  TransportConfig.MaxFlows (1 turns the growth on random loss off)
//	FERRY_AUTO_SWITCH        "0"          TransportConfig.NoAutoSwitch (auto picks one transport up front)
//	FERRY_TCP_CC             name         TransportConfig.TCPCongestion ("cubic", "bbr"...; Linux)
//	FERRY_BUFFERED_IO        "1"          Options.BufferedIO (page cache only, no direct I/O)
//	FERRY_PROGRESS_INTERVAL  Go duration  Options.ProgressInterval (the migration bench times gaps with it)
//	FERRY_LOG                debug|info   Options.Logger: the engine's diagnostics on stderr
//	FERRY_MANIFEST_BUDGET      bytes > 0    Options.ManifestBudget (tests: a receiver that refuses large offers)
//	FERRY_COMPRESSION        auto|always|never  Options.Compression (when sent chunks travel compressed)
//	FERRY_RELAY_SECRET       text         the relay secret of ferry-cli relay, and of --relay (when no --secret-file, --relay-secret-file)
//
// A value that does not parse is ignored, as before these were options.
package ferryenv

import (
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// Transport returns the transport configuration the environment asks for.
func Transport() engine.TransportConfig { return transport(os.Getenv) }

func transport(getenv func(string) string) engine.TransportConfig {
	var c engine.TransportConfig
	if d, err := time.ParseDuration(getenv("FERRY_QUIC_IDLE_TIMEOUT")); err == nil && d > 0 {
		c.QUICIdleTimeout = d
	}
	if n, err := strconv.Atoi(getenv("FERRY_QUIC_CONNS")); err == nil && n > 0 {
		c.QUICConns = n
	}
	if n, err := strconv.Atoi(getenv("FERRY_MAX_FLOWS")); err == nil && n > 0 {
		c.MaxFlows = n
	}
	c.NoAutoSwitch = getenv("FERRY_AUTO_SWITCH") == "0"
	c.TCPCongestion = getenv("FERRY_TCP_CC")
	return c
}

// Compression is FERRY_COMPRESSION when it is one of auto, always and
// never ("" otherwise): when sent chunks travel compressed
// (engine.Options.Compression).
func Compression() string {
	switch v := os.Getenv("FERRY_COMPRESSION"); v {
	case "auto", "always", "never":
		return v
	}
	return ""
}

// BufferedIO reports FERRY_BUFFERED_IO=1: file data goes through the page
// cache only (engine.Options.BufferedIO), to compare with the default, which
// follows the data (direct I/O for what is not cached).
func BufferedIO() bool { return os.Getenv("FERRY_BUFFERED_IO") == "1" }

// ProgressInterval is FERRY_PROGRESS_INTERVAL (zero when unset or bad):
// how often a transfer reports progress (engine.Options.ProgressInterval).
func ProgressInterval() time.Duration {
	d, err := time.ParseDuration(os.Getenv("FERRY_PROGRESS_INTERVAL"))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// Logger is FERRY_LOG: the engine's diagnostics at that level ("debug",
// "info", "warn") as text on stderr, or nil (discarded) when unset.
func Logger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("FERRY_LOG"))); err != nil || os.Getenv("FERRY_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// ManifestBudget is FERRY_MANIFEST_BUDGET (zero when unset or bad): the file
// names one device's offers may make a receiver hold
// (engine.Options.ManifestBudget).
func ManifestBudget() int64 {
	n, err := strconv.ParseInt(os.Getenv("FERRY_MANIFEST_BUDGET"), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// RelaySecret is FERRY_RELAY_SECRET: the relay secret (ferry-cli relay, and
// the devices' --relay), as given; "" when unset. An environment variable
// or a file keeps it out of the process list, where a flag would show it.
func RelaySecret() string { return os.Getenv("FERRY_RELAY_SECRET") }
