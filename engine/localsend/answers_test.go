package localsend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// hostileAnswers are answers a receiver may give a sender's prepare-upload
// (200, unless status says otherwise): each is refused as bad input before
// a byte is uploaded, or taken, its tokens' files uploaded. The sender
// offers files "a" and "b". They double as FuzzClientAnswers' seeds.
var hostileAnswers = []struct {
	name   string
	status int
	body   string
	ok     bool
}{
	{"both taken", 0, `{"sessionId":"s","files":{"a":"t1","b":"t2"}}`, true},
	{"one taken", 0, `{"sessionId":"s","files":{"b":"t2"}}`, true},
	{"none taken", 0, `{"sessionId":"s","files":{}}`, true},
	{"an empty token", 0, `{"sessionId":"s","files":{"a":""}}`, true},
	{"no session", 0, `{"files":{"a":"t1"}}`, false},
	{"session over the bound", 0, `{"sessionId":"` + strings.Repeat("s", MaxFieldLen+1) + `","files":{"a":"t1"}}`, false},
	{"a token for a file not offered", 0, `{"sessionId":"s","files":{"a":"t1","../c":"t3"}}`, false},
	// A token goes into every upload's URL: it is bounded as the session
	// ID is (it was not until 2026-12-06).
	{"token over the bound", 0, `{"sessionId":"s","files":{"a":"` + strings.Repeat("t", MaxFieldLen+1) + `"}}`, false},
	{"files not a map", 0, `{"sessionId":"s","files":["a"]}`, false},
	{"session not a string", 0, `{"sessionId":7,"files":{"a":"t1"}}`, false},
	{"not json", 0, `hello`, false},
	{"trailing bracket", 0, `{"sessionId":"s","files":{"a":"t1"}}]`, false},
	{"deep nesting", 0, `{"sessionId":"s","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false},
	{"over the size bound", 0, `{"sessionId":"s","files":{"a":"t1"}` + strings.Repeat(" ", MaxPrepareBytes) + `}`, false},
	{"declined with a message cut inside a character", http.StatusForbidden, `{"message":"` + strings.Repeat("x", maxMessage-1) + `é and more"}`, false},
}

// TestHostileReceiverAnswers sends to a receiver that gives each answer
// of hostileAnswers: a bad one fails the send before any upload, with
// ErrBadInput; a good one uploads what it took.
func TestHostileReceiverAnswers(t *testing.T) {
	for _, c := range hostileAnswers {
		t.Run(c.name, func(t *testing.T) {
			var uploads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				switch r.URL.Path {
				case apiPrefix + "prepare-upload":
					if c.status != 0 {
						w.WriteHeader(c.status)
					}
					io.WriteString(w, c.body)
				case apiPrefix + "upload":
					uploads.Add(1)
				}
			}))
			defer srv.Close()
			cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
			res, err := cl.Send(context.Background(), Target{Addr: srv.Listener.Addr().String(), Scheme: "http"},
				[]Upload{TextUpload("a", "hello"), TextUpload("b", "world")}, SendOptions{})
			var se *StatusError
			switch {
			case c.status != 0:
				if !errors.As(err, &se) || len(se.Message) > maxMessage || !utf8.ValidString(se.Message) {
					t.Fatalf("the receiver's words: %#v (%v)", se, err)
				}
			case c.ok:
				if err != nil || int(uploads.Load()) != len(res.Accepted) {
					t.Fatalf("%v: %d uploads of %v", err, uploads.Load(), res)
				}
			default:
				if !errors.Is(err, ErrBadInput) || uploads.Load() != 0 {
					t.Fatalf("%v, %d uploads", err, uploads.Load())
				}
			}
		})
	}
}

// FuzzClientAnswers reads what a receiver answers a sender: a
// prepare-upload answer, a device's info (info, register) and an error's
// message. What is taken is one JSON document within the bounds, names
// only files offered, and reads back the same once marshalled.
func FuzzClientAnswers(f *testing.F) {
	for _, c := range hostileAnswers {
		f.Add([]byte(c.body))
	}
	for _, c := range hostileAnnouncements {
		f.Add([]byte(c.in))
	}
	offered := map[string]File{"a": {ID: "a"}, "b": {ID: "b"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ans, err := readPrepareAnswer(b, offered); err == nil {
			if !json.Valid(b) || ans.SessionID == "" || len(ans.SessionID) > MaxFieldLen {
				t.Fatalf("took %q as %+v", b, ans)
			}
			for id, tok := range ans.Files {
				if _, ok := offered[id]; !ok || len(tok) > MaxFieldLen {
					t.Fatalf("took a token %.40q for file %q", tok, id)
				}
			}
			again, _ := json.Marshal(ans)
			if back, err := readPrepareAnswer(again, offered); err != nil || !reflect.DeepEqual(back, ans) {
				t.Fatalf("took %+v, which reads back as %+v, %v", ans, back, err)
			}
		} else if !errors.Is(err, ErrBadInput) {
			t.Fatalf("refused %q with %v, not bad input", b, err)
		}
		if in, err := parseInfo(b, false); err == nil {
			if !json.Valid(b) || in.Fingerprint == "" || in.Port < 0 || in.Port > 65535 {
				t.Fatalf("took %q as %+v", b, in)
			}
		}
		m := messageOf(b)
		var whole message
		if len(m) > maxMessage || (m != "" && json.Unmarshal(b, &whole) != nil) || !strings.HasPrefix(whole.Message, m) ||
			(utf8.ValidString(whole.Message) && !utf8.ValidString(m)) {
			t.Fatalf("the message of %q read as %q", b, m)
		}
	})
}
