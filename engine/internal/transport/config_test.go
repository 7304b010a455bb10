package transport

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport/spread"
)

// spreadPath simulates what a session's sampler reads every 10 ms: packets
// sent, some lost (at random, or when a queue overflows), and the RTT.
type spreadPath struct {
	minRTT  time.Duration
	perTick uint64                       // packets sent per 10 ms
	loss    func(tick int) float64       // share of this tick's packets lost
	rtt     func(tick int) time.Duration // smoothed and latest RTT in this tick
}

// grows feeds a judge with the default rule ten seconds of the path and
// returns the flows it advised last (flows when it never grew).
func (p spreadPath) grows(flows int) int {
	j := spread.NewJudge(Config{}.WithDefaults().SpreadRule(), flows)
	rng := rand.New(rand.NewPCG(11, 3))
	start := time.Unix(1000, 0)
	s := spread.Sample{MinRTT: p.minRTT, Flows: flows}
	for i := range 1000 {
		s.Sent += p.perTick
		for range p.perTick {
			if rng.Float64() < p.loss(i) {
				s.Lost++
			}
		}
		s.SRTT = p.rtt(i)
		s.LatestRTT = s.SRTT
		j.Observe(start.Add(time.Duration(i)*10*time.Millisecond), s)
	}
	return j.Flows()
}

// TestSpreadRuleShortLossyPath: with the default configuration a session
// on a short but lossy path (a busy 1 Gbit/s Wi-Fi: 2 ms, 0.5-1 % random
// loss, where one Cubic flow carries about 70 Mbit/s) grows its flows to
// the maximum, as a longer path does; loopback and a wired LAN still never
// grow, and a clean shared bottleneck at 2 ms does not either. Before
// SpreadRTT the rule used CleanRTT (5 ms), and the 2 ms paths stayed at
// TCP's four flows (issue #30: 241 Mbit/s of 1000).
func TestSpreadRuleShortLossyPath(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	flat := func(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
	jitter := func(d time.Duration) func(int) time.Duration {
		return func(i int) time.Duration { return d + time.Duration(i%4)*200*us }
	}
	rate := func(p float64) func(int) float64 { return func(int) float64 { return p } }
	// A neighbour's Cubic flow keeps a queue that saws between empty and
	// full, and the queue drops packets only when full: at the top of the
	// RTT. top is the RTT with the queue full, period its cycle in ticks.
	sawtooth := func(min, top time.Duration, period int) (func(int) float64, func(int) time.Duration) {
		return func(i int) float64 {
				if i%period >= period-2 {
					return 0.05 // 0.2-0.5 % over the cycle: enough to count
				}
				return 0
			}, func(i int) time.Duration {
				return min + (top-min)*time.Duration(i%period)/time.Duration(period-1)
			}
	}
	lanLoss, lanRTT := sawtooth(2*ms, 52*ms, 60)      // the lab's 50 ms queue at 1 Gbit/s
	tunLoss, tunRTT := sawtooth(2*ms, 14*ms, 20)      // a TUN device's 1000 packets at 1 Gbit/s
	wifiLoss, wifiRTT := sawtooth(2500*us, 10*ms, 30) // an access point's few ms of buffer
	cases := []struct {
		name  string
		p     spreadPath
		flows int
		want  int
	}{
		{"2 ms, 0.5 % random loss, TCP's four flows", spreadPath{2 * ms, 200, rate(0.005), jitter(2200 * us)}, 4, MaxSpreadFlows},
		{"2 ms, 1 % random loss, TCP's four flows", spreadPath{2 * ms, 200, rate(0.01), jitter(2200 * us)}, 4, MaxSpreadFlows},
		{"2 ms, 0.5 % random loss, one QUIC connection", spreadPath{2 * ms, 60, rate(0.005), jitter(2100 * us)}, 1, MaxSpreadFlows},
		{"1.2 ms, 1 % random loss", spreadPath{1200 * us, 200, rate(0.01), jitter(1300 * us)}, 4, MaxSpreadFlows},
		{"20 ms, 0.5 % random loss (as before)", spreadPath{20 * ms, 40, rate(0.005), flat(20 * ms)}, 4, MaxSpreadFlows},
		{"loopback losing 6 % in socket buffers", spreadPath{50 * us, 2000, rate(0.06), flat(2 * ms)}, 2, 2},
		{"a wired LAN, 0.4 ms, 0.5 % loss", spreadPath{400 * us, 800, rate(0.005), jitter(500 * us)}, 4, 4},
		{"2 ms, clean, beside a neighbour filling a 50 ms queue", spreadPath{2 * ms, 200, lanLoss, lanRTT}, 4, 4},
		{"2 ms, clean, a full TUN queue", spreadPath{2 * ms, 200, tunLoss, tunRTT}, 4, 4},
		{"2.5 ms, clean, an access point's queue", spreadPath{2500 * us, 200, wifiLoss, wifiRTT}, 4, 4},
		{"2 ms, clean", spreadPath{2 * ms, 800, rate(0), jitter(2200 * us)}, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.grows(c.flows); got != c.want {
				t.Errorf("%d flows grew to %d, want %d", c.flows, got, c.want)
			}
		})
	}
}

func TestSpreadRTTDefault(t *testing.T) {
	for _, c := range []struct {
		set, want time.Duration
	}{{0, time.Millisecond}, {-1, 0}, {3 * time.Millisecond, 3 * time.Millisecond}} {
		cfg := Config{SpreadRTT: c.set}.WithDefaults()
		if cfg.SpreadRTT != c.want || cfg.SpreadRule().Local != c.want {
			t.Errorf("SpreadRTT %v: got %v, rule %v, want %v", c.set, cfg.SpreadRTT, cfg.SpreadRule().Local, c.want)
		}
	}
}
