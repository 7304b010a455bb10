package main

import (
	"context"
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
