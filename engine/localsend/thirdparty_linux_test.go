package localsend

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netns"
)

// A third-party LocalSend implementation, so that a misreading of the
// protocol that Ferry and the test peer share shows up: the npm package
// "localsend" (CrossCopy/localsend-ts, 0.1.2, TypeScript; a CLI with send,
// receive and discover; its receiver speaks HTTP only, its sender HTTPS or
// HTTP). The tests run it inside network namespaces (its receiver scans its
// /24 every 30 s) and skip when it is not installed: `npm install -g
// localsend@0.1.2` (scripts/test.sh does), or FERRY_LOCALSEND_JS=/path/to/dist/cli.js.
func thirdPartyCLI(t *testing.T) []string {
	t.Helper()
	if js := os.Getenv("FERRY_LOCALSEND_JS"); js != "" {
		return []string{"node", js}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed (the third-party LocalSend CLI runs on it)")
	}
	if p, err := exec.LookPath("localsend"); err == nil {
		return []string{p}
	}
	t.Skip("skipping: the third-party LocalSend CLI is not installed (npm install -g localsend@0.1.2)")
	return nil
}

// inNS runs argv inside the namespace, with a bound on its life.
func inNS(ctx context.Context, ns *netns.NS, dir string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name}, argv...)...)
	cmd.Dir = dir
	return cmd
}

func TestThirdPartySendsToFerry(t *testing.T) {
	cli := thirdPartyCLI(t)
	a, b, ipA, _, _, _ := netns.Pair(t)
	rx := newMemReceiver()
	ferryServer(t, a, ipA, DefaultPort, ServerConfig{Info: Info{Alias: "ferry"}, Receiver: rx})
	dir := t.TempDir()
	data := bytes.Repeat([]byte("third party "), 50_000)
	if err := os.WriteFile(filepath.Join(dir, "from-js.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := inNS(ctx, b, dir, append(cli, "send", "--protocol", "https", ipA, "from-js.bin")...).CombinedOutput()
	if err != nil {
		t.Fatalf("localsend send: %v\n%s", err, out)
	}
	if err := nextEnd(t, rx); err != nil {
		t.Fatalf("session: %v\n%s", err, out)
	}
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if got := rx.files["from-js.bin"]; got == nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("the file did not arrive whole\n%s", out)
	}
	if o := rx.offers[0]; o.Verified() || !strings.Contains(o.Sender.Alias, "TypeScript") {
		t.Fatalf("offer %+v (the JS client presents no certificate)", o)
	}
}

func TestFerrySendsToThirdParty(t *testing.T) {
	cli := thirdPartyCLI(t)
	a, b, _, ipB, _, _ := netns.Pair(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recv := inNS(ctx, b, dir, append(cli, "receive", "--autoAccept", "--saveDir", dir, "--alias", "js-box", "--discoveryInterval", "3600")...)
	var log bytes.Buffer
	recv.Stdout, recv.Stderr = &log, &log
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = recv.Wait() })
	cl := NewClient(ClientConfig{Info: Info{Alias: "ferry"}, Cert: testCert(t, 1), Dial: a.Dial})
	tg := Target{Addr: fmt.Sprintf("%s:%d", ipB, DefaultPort), Scheme: "http"}
	// Its server comes up in its own time: ask for its info until it answers.
	deadline := time.Now().Add(hangGuard)
	var info Info
	for {
		var err error
		if info, err = cl.DeviceInfo(ctx, tg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the third-party receiver never answered: %v\n%s", err, log.String())
		}
		select {
		case <-time.After(100 * time.Millisecond): // polling a child's readiness, not a timing assertion
		case <-ctx.Done():
		}
	}
	if info.Alias != "js-box" {
		t.Fatalf("info %+v", info)
	}
	want := bytes.Repeat([]byte{42}, 200_000)
	res, err := cl.Send(ctx, tg, []Upload{bytesUpload("f1", "to-js.bin", want, true)}, SendOptions{})
	if err != nil || len(res.Accepted) != 1 {
		t.Fatalf("%+v %v\n%s", res, err, log.String())
	}
	// It answers the upload before its write stream has flushed: wait for
	// the bytes (bounded) rather than read a file still being written.
	var got []byte
	for deadline := time.Now().Add(hangGuard); ; {
		got, _ = os.ReadFile(filepath.Join(dir, "to-js.bin"))
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond): // polling another program's file, not a timing assertion
		case <-ctx.Done():
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the third-party receiver saved %d of %d bytes\n%s", len(got), len(want), log.String())
	}
}
