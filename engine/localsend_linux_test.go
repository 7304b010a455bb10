package engine

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ferrydrop/ferry/internal/lspeer"
)

// LocalSend uploads are written through the page cache (the sender waits
// for each file's answer; docs/localsend.md "Figures"): the received file's
// pages are in the cache afterwards, where the store's direct writes would
// have left none. Checked on ext4, where direct writes work.
func TestLocalSendUploadsThroughPageCache(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	var st syscall.Statfs_t
	if err := syscall.Statfs(e.DownloadDir(), &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("%s is not on ext4", e.DownloadDir())
	}
	res := receivedResult(t, e)
	data := make([]byte, 4<<20)
	rand.Read(data)
	sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "",
		[]lspeer.SendFile{{Name: "big.bin", Data: data}}, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("%+v %v", sr, err)
	}
	if r := <-res; r.State != StateDone || r.Files != 1 {
		t.Fatalf("result %+v", r)
	}
	f, err := os.Open(filepath.Join(e.DownloadDir(), "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cs unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: uint64(len(data))}, &cs, 0); err != nil {
		t.Skipf("no cachestat: %v", err)
	}
	if pages := uint64(len(data)) / uint64(os.Getpagesize()); cs.Cache < pages/2 {
		t.Fatalf("%d of the file's %d pages in the page cache: the upload was not written through it", cs.Cache, pages)
	}
}
