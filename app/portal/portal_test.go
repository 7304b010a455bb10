package portal

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// privateBus starts a D-Bus session daemon of the test's own and connects.
func privateBus(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Skip("needs dbus-daemon (apt-get install dbus-daemon)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=3")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	return strings.TrimSpace(line)
}

func connect(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fakePortal answers OpenFile with a Response signal on the request path
// the token names, as xdg-desktop-portal does.
type fakePortal struct {
	conn    *dbus.Conn
	code    uint32
	results map[string]dbus.Variant
	opts    chan map[string]dbus.Variant
}

func (p *fakePortal) OpenFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	p.opts <- opts
	token, _ := opts["handle_token"].Value().(string)
	handle := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_") + "/" + token)
	go p.conn.Emit(handle, responseSig, p.code, p.results)
	return handle, nil
}

func servePortal(t *testing.T, addr string, code uint32, uris []string) *fakePortal {
	t.Helper()
	c := connect(t, addr)
	p := &fakePortal{conn: c, code: code, results: map[string]dbus.Variant{}, opts: make(chan map[string]dbus.Variant, 1)}
	if uris != nil {
		p.results["uris"] = dbus.MakeVariant(uris)
	}
	if err := c.Export(p, objectPath, chooserIfc); err != nil {
		t.Fatal(err)
	}
	if r, err := c.RequestName(busName, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("portal name: %v %v", r, err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestOpenFilesSeveral(t *testing.T) {
	addr := privateBus(t)
	p := servePortal(t, addr, 0, []string{"file:///home/u/a.jpg", "file:///home/u/My%20Photos/b%231.jpg", "file://localhost/tmp/c"})
	got, err := OpenFiles(ctx(t), connect(t, addr), Request{Parent: "x11:1c", Title: "Send files", Multiple: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "/home/u/a.jpg|/home/u/My Photos/b#1.jpg|/tmp/c" {
		t.Fatalf("paths %q", got)
	}
	opts := <-p.opts
	if m, _ := opts["multiple"].Value().(bool); !m {
		t.Errorf("multiple not asked for: %v", opts)
	}
}

func TestOpenFilesCancelled(t *testing.T) {
	addr := privateBus(t)
	servePortal(t, addr, 1, nil)
	got, err := OpenFiles(ctx(t), connect(t, addr), Request{Folders: true})
	if err != nil || got != nil {
		t.Fatalf("cancelled: %q %v, want nothing", got, err)
	}
}

func TestOpenFilesWithoutPortal(t *testing.T) {
	addr := privateBus(t)
	_, err := OpenFiles(ctx(t), connect(t, addr), Request{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no portal: %v, want ErrUnavailable", err)
	}
}

// A portal's answer is input too: what is not a local file is refused.
func TestParseResponseHostile(t *testing.T) {
	for _, body := range [][]any{
		nil,
		{uint32(0)},
		{"0", map[string]dbus.Variant{}},
		{uint32(0), "not a map"},
		{uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant("file:///a")}},
		{uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"https://example.org/x"})}},
		{uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"file://otherhost/x"})}},
		{uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"file://"})}},
		{uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant([]string{"%zz"})}},
	} {
		if got, err := parseResponse(body); err == nil {
			t.Errorf("parseResponse(%v) = %q, want an error", body, got)
		}
	}
}
