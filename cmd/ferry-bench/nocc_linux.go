//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The "no-cc" command runs a program that may not choose its TCP congestion
// control, the way an unprivileged process on a typical desktop may not pick
// BBR (net.ipv4.tcp_allowed_congestion_control = "reno cubic"). The lab
// runs as root, and root may pick any congestion control; the host's
// allowed list is global and read-only inside a namespace. So a seccomp
// filter makes setsockopt(IPPROTO_TCP, TCP_CONGESTION) fail with EPERM, as
// the kernel does for an unprivileged socket asking for a restricted one;
// the socket keeps the default (the lab's, see netlab Config.CongestionControl).
// seccomp cannot read the name asked for, so every choice is refused, not
// only BBR's: Ferry only ever asks for BBR.

func init() {
	register(command{
		name:    "no-cc",
		summary: "run a program that may not choose its TCP congestion control (lab: BBR unavailable)",
		run:     runNoCC,
	})
}

// Offsets in struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64).
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg1 = 16 + 8*1 // low half on little-endian machines
	seccompArg2 = 16 + 8*2
)

func runNoCC(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: ferry-bench no-cc PROGRAM [ARGS...]")
	}
	arch, ok := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no-cc: no seccomp filter for %s", runtime.GOARCH)
	}
	prog, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	filter := []unix.SockFilter{
		{Code: ld, K: seccompArch},
		{Code: jeq, K: arch, Jt: 0, Jf: 6},
		{Code: ld, K: seccompNr},
		{Code: jeq, K: unix.SYS_SETSOCKOPT, Jt: 0, Jf: 4},
		{Code: ld, K: seccompArg1},
		{Code: jeq, K: unix.IPPROTO_TCP, Jt: 0, Jf: 2},
		{Code: ld, K: seccompArg2},
		{Code: jeq, K: unix.TCP_CONGESTION, Jt: 1, Jf: 0},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// The filter belongs to this thread; exec keeps it for the new program.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no-cc: no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("no-cc: seccomp: %w", errno)
	}
	return syscall.Exec(prog, args, os.Environ())
}
