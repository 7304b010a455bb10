//go:build linux

package netwatch

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// subscribe opens a routing netlink socket that receives the kernel's
// address, link and route messages. Each message only wakes the watcher,
// which then reads the addresses anew, so nothing here parses them.
func subscribe() (<-chan struct{}, func(), error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, nil, fmt.Errorf("netlink socket: %w", err)
	}
	groups := uint32(unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR |
		unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("netlink bind: %w", err)
	}
	// Through the Go poller, so that closing the file wakes the reader.
	f := os.NewFile(uintptr(fd), "netlink")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("netlink socket: %w", err)
	}
	notify := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(notify)
		buf := make([]byte, 64<<10)
		for {
			var rerr error
			err := rc.Read(func(fd uintptr) bool {
				_, _, rerr = unix.Recvfrom(int(fd), buf, 0)
				return rerr != unix.EAGAIN
			})
			// ENOBUFS: messages were lost; a change happened all the same.
			if err != nil || rerr != nil && rerr != unix.EINTR && rerr != unix.ENOBUFS {
				return
			}
			select {
			case notify <- struct{}{}:
			default:
			}
		}
	}()
	closeFn := func() {
		f.Close()
		<-done
	}
	return notify, closeFn, nil
}
