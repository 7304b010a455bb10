package ferryenv

import (
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

func TestTransport(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want engine.TransportConfig
	}{
		{nil, engine.TransportConfig{}},
		{map[string]string{"FERRY_QUIC_IDLE_TIMEOUT": "2s", "FERRY_QUIC_CONNS": "1", "FERRY_AUTO_SWITCH": "0", "FERRY_TCP_CC": "cubic", "FERRY_MAX_FLOWS": "1"},
			engine.TransportConfig{QUICIdleTimeout: 2 * time.Second, QUICConns: 1, NoAutoSwitch: true, TCPCongestion: "cubic", MaxFlows: 1}},
		{map[string]string{"FERRY_QUIC_IDLE_TIMEOUT": "soon", "FERRY_QUIC_CONNS": "-3", "FERRY_AUTO_SWITCH": "1", "FERRY_MAX_FLOWS": "many"}, engine.TransportConfig{}},
	} {
		got := transport(func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("%v: got %+v, want %+v", tc.env, got, tc.want)
		}
	}
}

func TestManifestBudget(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int64
	}{{"", 0}, {"4096", 4096}, {"-1", 0}, {"lots", 0}} {
		t.Setenv("FERRY_MANIFEST_BUDGET", tc.env)
		if got := ManifestBudget(); got != tc.want {
			t.Errorf("FERRY_MANIFEST_BUDGET=%q: got %d, want %d", tc.env, got, tc.want)
		}
	}
}
