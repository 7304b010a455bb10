package localsend

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// leanReceiver accepts every file of every offer and keeps nothing of it,
// so that what an accepted session holds is the server's alone.
type leanReceiver struct{ ends chan error }

func (l *leanReceiver) Offer(ctx context.Context, o *Offer) (Session, error) {
	acc := make([]int, len(o.Files))
	for i := range acc {
		acc[i] = i
	}
	return &leanSession{l: l, accepted: acc}, nil
}

type leanSession struct {
	l        *leanReceiver
	accepted []int
}

func (s *leanSession) Accepted() []int        { return s.accepted }
func (s *leanSession) Open(int) (Sink, error) { return nil, ErrRejected }
func (s *leanSession) End(err error)          { s.l.ends <- err }

// floodOffer is a prepare-upload of n files with the names, types and
// (every other file) checksums a real offer has.
func floodOffer(n int) string {
	var b strings.Builder
	b.WriteString(`{"info":{"alias":"flood","version":"2.1","deviceModel":"test","deviceType":"desktop","fingerprint":"flood","port":53317,"protocol":"https"},"files":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		sum := ""
		if i%2 == 0 {
			sum = fmt.Sprintf(`,"sha256":"%064x"`, i)
		}
		fmt.Fprintf(&b, `"f%06d":{"id":"f%06d","fileName":"flood/dir%03d/file%06d.bin","size":1048576,"fileType":"application/octet-stream"%s}`, i, i, i%100, i, sum)
	}
	b.WriteString(`}}`)
	return b.String()
}

// An accepted session that is never uploaded holds its file table until
// it ends, and many addresses may each hold one of thousands of files at
// once (--accept all; docs/localsend.md, floods), which the engine's
// manifest budget charges 1,024 bytes a file: what the server keeps per
// file must be what an upload needs, and no more. It kept the decoded
// entries in a map with a random token each, 343 bytes a file with these
// names; the sessions' tables are given back when they end.
func TestAcceptedSessionsHoldLittle(t *testing.T) {
	const files, offers = 2000, 6
	rx := &leanReceiver{ends: make(chan error, offers)}
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	body := floodOffer(files)
	post := func(route string, body string) *http.Response {
		t.Helper()
		resp, err := hc.Post("https://"+addr+apiPrefix+route, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	before := testutil.LiveHeap()
	var sessions []string
	for range offers {
		resp := post("prepare-upload", body)
		var ans PrepareUploadAnswer
		err := json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || len(ans.Files) != files {
			t.Fatalf("offer: %d, %v, %d tokens", resp.StatusCode, err, len(ans.Files))
		}
		sessions = append(sessions, ans.SessionID)
	}
	held := testutil.LiveHeap() - before
	perFile := held / (files * offers)
	t.Logf("an accepted file held %d bytes", perFile)
	if perFile > 100 {
		t.Errorf("an accepted file that is never uploaded holds %d bytes on the server, want at most 100", perFile)
	}
	for _, id := range sessions {
		post("cancel?sessionId="+url.QueryEscape(id), "").Body.Close()
		<-rx.ends
	}
	hc.CloseIdleConnections()
	srv.mu.Lock()
	left := len(srv.sessions)
	srv.mu.Unlock()
	// (What may stay is the connection's buffers, until the server sees it closed.)
	if after := testutil.LiveHeap() - before; left != 0 || after > held/4 {
		t.Errorf("after the sessions ended: %d left, %d of %d bytes still held", left, after, held)
	}
}
