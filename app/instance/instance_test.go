package instance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var requestCases = []struct {
	name string
	line string
	ok   bool
}{
	{"files", `{"files":["/home/u/a.txt","/home/u/dir"],"config":"/home/u/.config/Ferry"}` + "\n", true},
	{"raise only", `{"config":"/c"}`, true},
	{"relative file", `{"files":["a.txt"],"config":"/c"}`, false},
	{"empty file", `{"files":[""],"config":"/c"}`, false},
	{"nul in file", `{"files":["/a\u0000b"],"config":"/c"}`, false},
	{"no config", `{"files":["/a"]}`, false},
	{"relative config", `{"config":"c"}`, false},
	{"not json", `files=/a`, false},
	{"wrong types", `{"files":"/a","config":1}`, false},
	{"truncated", `{"files":["/a"`, false},
	{"too many files", `{"config":"/c","files":[` + strings.Repeat(`"/a",`, maxFiles) + `"/a"]}`, false},
	{"too long", `{"config":"/c","files":["/` + strings.Repeat("a", maxRequestBytes) + `"]}`, false},
}

func TestParseRequest(t *testing.T) {
	for _, c := range requestCases {
		_, err := ParseRequest([]byte(c.line))
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// FuzzParseRequest: whatever another local process sends, a request that
// parses holds only absolute paths and stays within the limits.
func FuzzParseRequest(f *testing.F) {
	for _, c := range requestCases {
		if len(c.line) < 4096 {
			f.Add([]byte(c.line))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseRequest(line)
		if err != nil {
			return
		}
		if len(r.Files) > maxFiles || !filepath.IsAbs(r.Config) {
			t.Fatalf("accepted %+v", r)
		}
		for _, p := range r.Files {
			if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
				t.Fatalf("accepted file %q", p)
			}
		}
	})
}

// serve claims dir and serves requests into a channel until the test ends.
func serve(t *testing.T, dir string) (*Primary, <-chan Request) {
	t.Helper()
	p, err := Claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Request, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, func(r Request) { got <- r }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p, got
}

func handOver(t *testing.T, dir string, r Request) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return HandOver(ctx, dir, r)
}

func TestSecondLaunchHandsOver(t *testing.T) {
	dir := t.TempDir()
	_, got := serve(t, dir)
	if _, err := Claim(dir); !errors.Is(err, ErrRunning) {
		t.Fatalf("second claim: %v, want ErrRunning", err)
	}
	want := []string{"/home/u/holiday photos.jpg", "/home/u/Documents"}
	if err := handOver(t, dir, Request{Files: want}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if len(r.Files) != 2 || r.Files[0] != want[0] || r.Files[1] != want[1] || r.Config != dir {
		t.Fatalf("request = %+v", r)
	}
}

func TestOtherConfigDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	_, got := serve(t, dir)
	// A request naming another dir cannot come through this socket by
	// mistake, but if it did, the instance must not act on it.
	c, token, err := dial(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte(`{"config":"/somewhere/else","token":"` + token + `"}` + "\n"))
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	if !strings.Contains(string(buf[:n]), `"ok":false`) {
		t.Fatalf("reply %q, want a refusal", buf[:n])
	}
	select {
	case r := <-got:
		t.Fatalf("handled %+v", r)
	default:
	}
}

// TestLockDiesWithItsProcess kills an instance with SIGKILL and starts
// another on the same dir.
func TestLockDiesWithItsProcess(t *testing.T) {
	if os.Getenv("FERRY_INSTANCE_HELPER") != "" {
		if _, err := Claim(os.Getenv("FERRY_INSTANCE_HELPER")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("claimed\n")
		select {} // until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "FERRY_INSTANCE_HELPER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil || string(buf[:7]) != "claimed" {
		cmd.Process.Kill()
		t.Fatalf("helper did not claim the dir: %q %v", buf, err)
	}
	if _, err := Claim(dir); !errors.Is(err, ErrRunning) {
		t.Fatalf("claim while the helper runs: %v, want ErrRunning", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	_, got := serve(t, dir)
	if err := handOver(t, dir, Request{}); err != nil {
		t.Fatal(err)
	}
	<-got
}
