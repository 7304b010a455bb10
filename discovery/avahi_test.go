package discovery

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// avahiNS runs a private dbus-daemon and avahi-daemon inside network
// namespace ns, in a private mount namespace (so /run of the host is not
// touched and a host avahi-daemon does not conflict), and stops them when
// the test ends. It returns the environment avahi's clients need.
func avahiNS(t *testing.T, ns string) []string {
	t.Helper()
	for _, bin := range []string{"dbus-daemon", "avahi-daemon", "avahi-browse", "avahi-publish", "unshare"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping Avahi interop: %s is not installed (apt-get install dbus avahi-daemon avahi-utils util-linux)", bin)
		}
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "system_bus_socket")
	busConf := filepath.Join(dir, "bus.conf")
	writeFile(t, busConf, `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`)
	avahiConf := filepath.Join(dir, "avahi-daemon.conf")
	writeFile(t, avahiConf, `[server]
host-name=avahi-interop
use-ipv4=yes
use-ipv6=yes
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
`)
	env := append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+sock)

	bus := exec.Command("dbus-daemon", "--config-file="+busConf, "--nofork", "--print-address")
	busOut, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bus.Stderr = &testWriter{t: t, prefix: "dbus: "}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	stopProcess(t, bus)
	// dbus-daemon prints its address once it listens.
	if _, err := bufio.NewReader(busOut).ReadString('\n'); err != nil {
		t.Fatalf("dbus-daemon did not start: %v", err)
	}

	// A private mount namespace with its own /run for avahi's pid file and socket.
	script := `mount -t tmpfs ferry-avahi /run && mkdir -p /run/avahi-daemon && exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "$1"`
	avahi := exec.Command("ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", avahiConf)
	avahi.Env = env
	avahiErr, err := avahi.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := avahi.Start(); err != nil {
		t.Fatal(err)
	}
	stopProcess(t, avahi)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(avahiErr)
		once := false
		for sc.Scan() {
			t.Logf("avahi: %s", sc.Text())
			if !once && strings.Contains(sc.Text(), "Server startup complete") {
				once = true
				close(ready)
			}
		}
		if !once {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("avahi-daemon did not report startup")
	}
	if avahi.ProcessState != nil {
		t.Fatal("avahi-daemon exited")
	}
	return env
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopProcess terminates cmd (SIGTERM, then SIGKILL) when the test ends.
func stopProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// TestAvahiInterop checks Ferry against an independent mDNS stack: Avahi
// sees our advertisement with its TXT record, and a service published with
// avahi-publish shows up (and leaves) in our table.
func TestAvahiInterop(t *testing.T) {
	requireRootAndIP(t)
	nsA, nsB, ipA, ipB := vethPair(t)
	env := avahiNS(t, nsB)
	ferry := startHelper(t, nsA, "Ferry Interop")
	ferry.waitFor(t, "ready", 10*time.Second, func(l helperLine) bool { return l.Ev == "ready" })

	t.Run("avahi-browse sees Ferry", func(t *testing.T) {
		// -t ends after Avahi's first "all for now"; ask again until the
		// answer is in its cache (bounded).
		var out string
		for i := 0; i < 10; i++ {
			cmd := exec.Command("ip", "netns", "exec", nsB, "avahi-browse", "-rpt", ServiceType)
			cmd.Env = env
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("avahi-browse: %v (%s)", err, b)
			}
			out = string(b)
			if line := resolvedLine(out, "Ferry Interop"); line != "" {
				f := strings.Split(line, ";")
				// =;iface;proto;name;type;domain;host;address;port;txt
				if len(f) < 10 {
					t.Fatalf("short avahi-browse line %q", line)
				}
				if want := hostName(ferry.id) + ".local"; f[6] != want {
					t.Errorf("host %s, want %s", f[6], want)
				}
				if f[8] != "40000" {
					t.Errorf("port %s, want 40000 (QUIC)", f[8])
				}
				if f[2] == "IPv4" && f[7] != ipA {
					t.Errorf("address %s, want %s", f[7], ipA)
				}
				for _, kv := range []string{`"v=1"`, `"id=` + ferry.id + `"`, `"q=40000"`, `"t=40001"`, `"os=linux"`, `"n=Ferry Interop"`} {
					if !strings.Contains(f[9], kv) {
						t.Errorf("TXT %s lacks %s", f[9], kv)
					}
				}
				return
			}
		}
		t.Fatalf("avahi-browse never resolved our service; last output:\n%s", out)
	})

	t.Run("avahi-publish appears in Ferry", func(t *testing.T) {
		id := randomID(t)
		pub := exec.Command("ip", "netns", "exec", nsB, "avahi-publish", "-s", "Avahi Box", ServiceType, "4242",
			"v=1", "id="+id, "q=4242", "t=4243", "os=freebsd", "n=Avahi Box")
		pub.Env = env
		pub.Stdout = io.Discard
		pub.Stderr = &testWriter{t: t, prefix: "avahi-publish: "}
		if err := pub.Start(); err != nil {
			t.Fatal(err)
		}
		stopProcess(t, pub)
		// Avahi probes for ~1 s before announcing; our periodic query picks it up too.
		l := ferry.waitFor(t, "the Avahi service", 15*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == id })
		if l.Name != "Avahi Box" {
			t.Errorf("Avahi peer = %+v, want name Avahi Box", l)
		}
		// Avahi sends its IPv4 and IPv6 answers in separate packets: the
		// IPv4 address may arrive as a change, and sorts first (same subnet).
		if !slices.Contains(l.Addrs, ipB) {
			l = ferry.waitFor(t, "the Avahi service's IPv4 address", 15*time.Second, func(l helperLine) bool {
				return l.Ev == "changed" && l.ID == id && slices.Contains(l.Addrs, ipB)
			})
		}
		if l.Addrs[0] != ipB {
			t.Errorf("Avahi peer addresses %v, want %s first", l.Addrs, ipB)
		}
		_ = pub.Process.Signal(syscall.SIGTERM) // Avahi sends goodbyes
		gone := ferry.waitFor(t, "the Avahi service leaving", 15*time.Second, func(l helperLine) bool { return l.Ev == "gone" && l.ID == id })
		t.Logf("Avahi service left by %s", gone.Reason)
	})

	t.Run("Avahi sees Ferry leave", func(t *testing.T) {
		ferry.stdin.Close()
		ferry.waitFor(t, "clean shutdown", 10*time.Second, func(l helperLine) bool { return l.Ev == "closed" })
		// Without a goodbye Avahi would keep the record for its TTL (3200 s).
		for i := 0; i < 10; i++ {
			cmd := exec.Command("ip", "netns", "exec", nsB, "avahi-browse", "-pt", ServiceType)
			cmd.Env = env
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("avahi-browse: %v", err)
			}
			if !strings.Contains(string(b), `Ferry\032Interop`) {
				return
			}
		}
		t.Fatal("Avahi still lists Ferry after its clean shutdown")
	})
}

// resolvedLine returns the avahi-browse -p line resolving instance name
// (which avahi-browse escapes: a space is \032).
func resolvedLine(out, name string) string {
	name = strings.ReplaceAll(name, " ", `\032`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "=;") && strings.Contains(line, ";"+name+";") {
			return line
		}
	}
	return ""
}
