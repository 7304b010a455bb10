package app

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/uiloop"
	"github.com/ferrydrop/ferry/internal/uitree"
	"github.com/ferrydrop/ferry/ui"
)

// BenchmarkUIStallRealEngine is ui's BenchmarkUIStall with real engines
// under the window (issue 30): a tree of n small files in n/100 folders
// goes from one engine to another over loopback (TCP, both in this
// process), the receiver's events through the app's pump into the UI's
// Run, its updates run one at a time on one OS thread as Fyne's driver
// runs them (package uiloop), the widgets those of Fyne's test driver.
// The prompt's Accept button is tapped on that thread as soon as the
// prompt is up. cpu-ms is the CPU time of the costliest
// update (that thread's own), stall-ms the wall time of the longest,
// wait-ms the longest an update waited in the queue, prompt-s how long
// after the send the prompt was up, s the transfer from the send to the
// receiver's result (each the worst of the runs). Files go to a tmpfs where there is
// one (/dev/shm), so the disk does not set the pace.
//
//	go test -run '^$' -bench UIStallRealEngine -benchtime 3x ./app/
func BenchmarkUIStallRealEngine(b *testing.B) {
	b.Setenv("XDG_CONFIG_HOME", b.TempDir())
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			src := filepath.Join(scratch(b), "tree")
			writeTree(b, src, n)
			benchTreeInUI(b, src, n)
		})
	}
	// A real tree too, such as workload D (scripts/workload-d.sh):
	// FERRY_UI_BENCH_TREE=/path/to/tree.
	if src := os.Getenv("FERRY_UI_BENCH_TREE"); src != "" {
		b.Run("tree="+filepath.Base(src), func(b *testing.B) {
			n := 0
			err := filepath.WalkDir(src, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					n++
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			benchTreeInUI(b, src, n)
		})
	}
}

// benchTreeInUI runs receiveTreeInUI b.N times and reports the worst of
// each figure.
func benchTreeInUI(b *testing.B, src string, n int) {
	var st uiloop.Stats
	var secs, prompt float64
	for range b.N {
		s, ran, shown := receiveTreeInUI(b, src, n)
		st.MaxStall, st.MaxWait, st.MaxCPU = max(st.MaxStall, s.MaxStall), max(st.MaxWait, s.MaxWait), max(st.MaxCPU, s.MaxCPU)
		st.Updates += s.Updates
		secs, prompt = max(secs, ran.Seconds()), max(prompt, shown.Seconds())
	}
	b.ReportMetric(float64(st.MaxStall)/float64(time.Millisecond), "stall-ms")
	b.ReportMetric(float64(st.MaxWait)/float64(time.Millisecond), "wait-ms")
	b.ReportMetric(float64(st.MaxCPU)/float64(time.Millisecond), "cpu-ms")
	b.ReportMetric(float64(st.Updates)/float64(b.N), "updates/op")
	b.ReportMetric(secs, "s")
	b.ReportMetric(prompt, "prompt-s")
}

// receiveTreeInUI sends the tree at src (n files) from a new engine to
// another whose events drive a UI, and returns what the UI's loop saw, how
// long the transfer took and how long after the send the prompt was up.
func receiveTreeInUI(b *testing.B, src string, n int) (st uiloop.Stats, ran, prompt time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dest := filepath.Join(scratch(b), "in")
	if err := os.Mkdir(dest, 0o755); err != nil {
		b.Fatal(err)
	}
	send := newTestBackend(b, func(o *engine.Options) { o.Name = "Sender" })
	recv := newTestBackend(b, func(o *engine.Options) { o.Name, o.DownloadDir = "Receiver", dest })
	if err := recv.eng.Start(recv.ctx); err != nil {
		b.Fatal(err)
	}
	pumped := make(chan ui.TransferEvent, 256)
	goPump(b, ctx, recv, pumped, make(chan ui.DeviceEvent, 64))

	loop := uiloop.New()
	stopLoop := make(chan struct{})
	go loop.Run(stopLoop)
	a := test.NewTempApp(b)
	w := test.NewTempWindow(b, nil)
	w.Resize(fyne.NewSize(900, 600))
	u := ui.New(a, w, recv, ui.Device{ID: recv.eng.ID(), Name: recv.eng.Name()}, ui.Options{Refresh: 50 * time.Millisecond, Do: loop.Do})
	transfers := make(chan ui.TransferEvent)
	runDone := make(chan error, 1)
	go func() { runDone <- u.Run(ctx, nil, transfers) }()

	start := time.Now()
	if err := send.Send(ui.Device{ID: recv.eng.ID(), Name: recv.eng.Name(), Addrs: recv.eng.Addrs()}, ui.Items{Paths: []string{src}}); err != nil {
		b.Fatal(err)
	}
	var result *ui.Result
	var prompted time.Time // set on the loop's goroutine, read once it is done
	timeout := time.After(10 * time.Minute)
	for result == nil {
		select {
		case ev := <-pumped:
			transfers <- ev
			switch ev.Kind {
			case ui.TransferOffer:
				clickAcceptOnceShown(loop, w, &prompted)
			case ui.TransferResult:
				result = ev.Result
			}
		case <-timeout:
			b.Fatal("no result in 10 minutes")
		}
	}
	ran = time.Since(start)
	if result.State != ui.StateDone || result.Files != n || result.Verified != n {
		b.Fatalf("result %s: %d files, %d verified, want %d (%s)", result.State, result.Files, result.Verified, n, result.Err)
	}
	cancel()
	<-runDone
	close(stopLoop)
	<-loop.Done()
	if err := os.RemoveAll(dest); err != nil {
		b.Fatal(err)
	}
	return loop.Stats(), ran, prompted.Sub(start)
}

// clickAcceptOnceShown taps the prompt's Accept button on the UI's loop
// once the prompt is up, as a user would, looking again every 5 ms, and
// notes when it found it in shown.
func clickAcceptOnceShown(loop *uiloop.Loop, w fyne.Window, shown *time.Time) {
	var look func()
	look = func() {
		var accept fyne.Tappable
		if top := w.Canvas().Overlays().Top(); top != nil {
			uitree.Walk(top, func(o fyne.CanvasObject) {
				if t, ok := o.(fyne.Tappable); ok && accept == nil && labelled(o, "Accept") {
					accept = t
				}
			})
		}
		if accept == nil {
			time.AfterFunc(5*time.Millisecond, func() { loop.Do(look) })
			return
		}
		*shown = time.Now()
		test.Tap(accept)
	}
	loop.Do(look)
}

// labelled says whether the widget o draws text as its label (a button's
// label is a rich text inside it; the app's buttons are their own type).
func labelled(o fyne.CanvasObject, text string) bool {
	w, ok := o.(fyne.Widget)
	if !ok {
		return false
	}
	for _, c := range test.WidgetRenderer(w).Objects() {
		if r, ok := c.(*widget.RichText); ok && r.String() == text {
			return true
		}
	}
	return false
}

// writeTree writes n files of 100 bytes into n/100 folders under dir.
func writeTree(b *testing.B, dir string, n int) {
	body := make([]byte, 100)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i/100), fmt.Sprintf("photo-%d.jpg", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body[0] = byte(i)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// scratch is a temporary folder on a tmpfs where there is one.
func scratch(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "ferry-bench-")
		if err == nil {
			b.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return b.TempDir()
}
