package main

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sshKit is what the scp and rsync baselines need to reach a private sshd:
// a throwaway host key, a throwaway client key and a configuration that
// accepts only that key. The lab runs one sshd for a whole sweep inside its
// Receiver namespace; the loopback bench runs one per transfer on
// 127.0.0.1 (sshd -d serves a single connection and exits, so its resource
// usage is the receiving side's).
type sshKit struct {
	sshd string   // the sshd binary
	cfg  string   // sshd_config: keys and policy, no address
	opts []string // ssh client options
}

// newSSHKit creates the keys and configuration in dir.
func newSSHKit(ctx context.Context, dir string) (*sshKit, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			return nil, skipError{"sshd not installed (apt install openssh-server)"}
		}
		sshd = "/usr/sbin/sshd"
	}
	for _, b := range []string{"ssh", "ssh-keygen", "scp", "rsync"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, skipError{b + " not installed"}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Debian's sshd insists on its privilege-separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	for _, k := range []string{"host_key", "client_key"} {
		if _, err := runCmd(exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k))); err != nil {
			return nil, err
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	conf := strings.Join([]string{
		"HostKey " + filepath.Join(dir, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PidFile none",
		"UsePAM no",
		"UseDNS no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"Subsystem sftp internal-sftp",
		"MaxStartups 100",
		"",
	}, "\n")
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return &sshKit{sshd: sshd, cfg: cfg, opts: []string{
		"-i", filepath.Join(dir, "client_key"),
		"-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes",
		"-o", "GSSAPIAuthentication=no",
		"-o", "LogLevel=ERROR",
	}}, nil
}

// sshdArgs are sshd's arguments to listen on addr:port, logging to stderr:
// as a daemon for many connections, or (once) in debug mode, which serves
// one connection without forking and then exits. Either way sshd prints
// "Server listening" once it listens.
func (k *sshKit) sshdArgs(addr netip.Addr, port string, once bool) []string {
	mode := "-D"
	if once {
		mode = "-d"
	}
	return []string{mode, "-e", "-f", k.cfg, "-o", "Port=" + port, "-o", "ListenAddress=" + addr.String()}
}

// scpArgs copies files into dir on host.
func (k *sshKit) scpArgs(port string, files []string, host netip.Addr, dir string) []string {
	args := append([]string{"-q", "-P", port}, k.opts...)
	args = append(args, files...)
	return append(args, "root@"+host.String()+":"+dir+"/")
}

// rsyncArgs copies the contents of folder src into dir on host, as
// `rsync -a -e ssh` does.
func (k *sshKit) rsyncArgs(port, src string, host netip.Addr, dir string) []string {
	sshCmd := "ssh -p " + port + " " + strings.Join(k.opts, " ")
	return []string{"-a", "-e", sshCmd, src + "/", "root@" + host.String() + ":" + dir + "/"}
}
