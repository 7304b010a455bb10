package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/lspeer"
)

// TestReceiveServesLocalSend: receive takes a file from the independent
// LocalSend test peer (over loopback, on a free port, announcing nothing).
func TestReceiveServesLocalSend(t *testing.T) {
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery", "--localsend-port", "0")
	re := regexp.MustCompile(`on port (\d+).*fingerprint ([0-9A-F]{64})`)
	var m []string
	for m == nil {
		select {
		case <-r.errOut.changed():
		case code := <-r.exit:
			t.Fatalf("receive exited %d: %s", code, r.errOut)
		}
		m = re.FindStringSubmatch(r.errOut.String())
	}
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Send(context.Background(), "127.0.0.1:"+m[1], m[2], true, "", "", []lspeer.SendFile{{Name: "photos/a.jpg", Data: []byte("jpeg bytes"), WithSHA: true}}, nil)
	if err != nil || res.UploadStatus["photos/a.jpg"] != 200 {
		t.Fatalf("%+v %v", res, err)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive exit %d: %s", code, r.errOut)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "photos", "a.jpg")); err != nil || string(b) != "jpeg bytes" {
		t.Fatalf("received %q %v", b, err)
	}
	if !strings.Contains(r.out.String(), "1 of 1 files verified") {
		t.Fatalf("output: %s", r.out)
	}
}

// TestSendToLocalSendTellsWhatWasLeftOut: a LocalSend receiver that takes
// only some of the files (its user unticked one) ends the send with the
// file named and a non-zero exit, not "1 of 1 files verified"; the summary
// names what carried the files.
func TestSendToLocalSendTellsWhatWasLeftOut(t *testing.T) {
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	p.Skip = func(name string) bool { return name == "b.txt" }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	a := writeFile(t, "a.txt", "alpha")
	b := writeFile(t, "b.txt", "beta")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--protocol", "localsend",
		"--localsend-fingerprint", p.Fingerprint, "--to", ln.Addr().String(), a, b)
	if code != 1 || !strings.Contains(stderr, "did not take 1 file(s)") {
		t.Fatalf("exit %d, stderr %q; want 1, saying a file was not taken", code, stderr)
	}
	for _, want := range []string{"FAILED  b.txt: Phone did not take this file.", "done: 1 of 1 files verified", "over https", "refused: 1 file(s)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if got, _, _, _, _, _ := p.Snapshot(); string(got["a.txt"]) != "alpha" || got["b.txt"] != nil {
		t.Fatalf("the peer got %d files", len(got))
	}
}
