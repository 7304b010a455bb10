package anywhere

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
)

var (
	idA = identity.DeviceID{1, 2, 3}
	idB = identity.DeviceID{4, 5, 6}
	idC = identity.DeviceID{7, 8, 9}
	t0  = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
)

func secret(b byte) rendezvous.Secret {
	var s rendezvous.Secret
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

func goodCall() Message {
	return Message{Kind: KindCall, From: idA.String(), To: idB.String(), At: t0.Unix(), Call: strings.Repeat("ab", 16),
		Ufrag: "abcd", Pwd: strings.Repeat("p", 22),
		Candidates: []string{"candidate:1 1 udp 2130706431 192.168.1.2 40000 typ host"}}
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	s := secret(1)
	box := CallName(s, idB, t0)
	blob, err := Seal(s, box, goodCall())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(s, box, blob, KindCall, idA, idB, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if m.Call != goodCall().Call || len(m.Candidates) != 1 {
		t.Fatalf("opened %+v", m)
	}
	// What the relay sees says nothing of who: no device ID, in any form.
	for _, id := range []identity.DeviceID{idA, idB} {
		if bytes.Contains(blob, []byte(id.String())) || strings.Contains(box, id.String()) || bytes.Contains(blob, id[:8]) {
			t.Errorf("blob or name shows device %s", id.Short())
		}
	}
}

// TestOpenHostile: blobs a relay or a stranger could put in a box.
func TestOpenHostile(t *testing.T) {
	t.Parallel()
	s := secret(1)
	box := CallName(s, idB, t0)
	good, _ := Seal(s, box, goodCall())
	sealWith := func(s rendezvous.Secret, box string, m Message) []byte {
		b, err := Seal(s, box, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 1
	call := goodCall()
	old := call
	old.At = t0.Add(-time.Hour).Unix()
	fromC := call
	fromC.From = idC.String()
	answer := call
	answer.Kind = KindAnswer
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"empty", nil},
		{"short", []byte{1, 2, 3}},
		{"too big", make([]byte, MaxBlob+1)},
		{"wrong version", append([]byte{9}, good[1:]...)},
		{"one bit flipped", flip},
		{"another secret (a stranger)", sealWith(secret(2), box, call)},
		{"moved from another box", sealWith(s, CallName(s, idA, t0), call)},
		{"replayed an hour later", sealWith(s, box, old)},
		{"claims another sender", sealWith(s, box, fromC)},
		{"an answer where a call belongs", sealWith(s, box, answer)},
	} {
		if _, err := Open(s, box, tc.blob, KindCall, idA, idB, t0); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: err %v, want ErrBadMessage", tc.name, err)
		}
	}
}

// parseCases are hostile and good plaintexts; they seed FuzzParseMessage.
var parseCases = []struct {
	name string
	in   string
	ok   bool
}{
	{"good call", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":["candidate:1 1 udp 1 1.2.3.4 5 typ host"]}`, true},
	{"good presence", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1}`, true},
	{"not json", `hello`, false},
	{"trailing", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1}{}`, false},
	{"unknown kind", `{"kind":"shell","from":"` + idA.String() + `","to":"` + idB.String() + `"}`, false},
	{"bad id", `{"kind":"presence","from":"nobody","to":"` + idB.String() + `"}`, false},
	{"presence with candidates", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","candidates":["x"]}`, false},
	{"good left", `{"kind":"left","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1}`, true},
	{"left with a call", `{"kind":"left","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"` + strings.Repeat("a", 32) + `"}`, false},
	{"call without candidates", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `"}`, false},
	{"short pwd", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"short","candidates":["c"]}`, false},
	{"bad call name", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"../../etc","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":["c"]}`, false},
	{"control char in candidate", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":["a\nb"]}`, false},
	{"presence of an instance", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":"0123456789abcdef"}`, true},
	{"answer of an instance", `{"kind":"answer","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":["c"],"instance":"0123456789abcdef"}`, true},
	{"instance too short", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":"0123"}`, false},
	{"instance too long", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":"` + strings.Repeat("0", 4096) + `"}`, false},
	{"trailing bracket", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1}]`, false},
	{"trailing brace", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1} }`, false},
	{"instance not hex", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":"0123456789ABCDEF"}`, false},
	{"instance with a control char", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":"0123456789abcde\n"}`, false},
	{"instance not a string", `{"kind":"presence","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"instance":7}`, false},
	{"call with an instance", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","at":1,"call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":["c"],"instance":"0123456789abcdef"}`, false},
	{"too many candidates", `{"kind":"call","from":"` + idA.String() + `","to":"` + idB.String() + `","call":"` + strings.Repeat("0a", 16) + `","ufrag":"abcd","pwd":"` + strings.Repeat("x", 22) + `","candidates":[` + strings.Repeat(`"c",`, MaxCandidates) + `"c"]}`, false},
}

func TestParseMessageHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range parseCases {
		_, err := ParseMessage([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: err %v is not ErrBadMessage", tc.name, err)
		}
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMessage(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which is not one JSON document", b)
		}
		if len(m.Candidates) > MaxCandidates {
			t.Fatalf("%d candidates accepted", len(m.Candidates))
		}
		if m.Instance != "" && len(m.Instance) != InstanceLen {
			t.Fatalf("instance %.40q accepted", m.Instance)
		}
		// What it accepts seals and opens to the same.
		if _, err := Seal(secret(1), strings.Repeat("0", 32), m); err != nil && len(b) < MaxBlob-sealOverhead {
			t.Fatalf("accepted message does not seal: %v", err)
		}
	})
}

func FuzzOpen(f *testing.F) {
	s := secret(1)
	box := CallName(s, idB, t0)
	// A fixed nonce: the fuzzing workers compute the same blob.
	good, _ := sealNonce(s, box, goodCall(), [12]byte{7})
	f.Add(good)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := Open(s, box, b, KindCall, idA, idB, t0); err == nil && !reflect.DeepEqual(m, goodCall()) {
			// Only what was sealed opens: the fuzzer cannot forge a message.
			t.Fatalf("forged blob opened: %+v", m)
		}
	})
}

func TestNamesRotate(t *testing.T) {
	t.Parallel()
	s := secret(1)
	a, b := CallName(s, idB, t0), CallName(s, idB, t0.Add(rendezvous.Period))
	p := PresenceName(s, idB, t0)
	if a == b || a == p || CheckName(a) != nil || CheckName(p) != nil || CheckName(AnswerName(s, NewCall())) != nil {
		t.Fatalf("names: call %s next %s presence %s", a, b, p)
	}
	if CallName(secret(2), idB, t0) == a {
		t.Fatal("another secret gives the same call box")
	}
}

// recordCases seed FuzzDecodeRecords: replies a hostile relay could send.
var recordCases = []struct {
	name string
	in   []byte
	n    int
	ok   bool
}{
	{"empty", nil, 1, true},
	{"one", AppendRecord(nil, 0, []byte("blob")), 1, true},
	{"two names", AppendRecord(AppendRecord(nil, 1, []byte("x")), 0, []byte("y")), 2, true},
	{"index out of range", AppendRecord(nil, 3, []byte("x")), 2, false},
	{"length past the end", []byte{0, 0, 9, 'a'}, 1, false},
	{"truncated header", []byte{0, 0}, 1, false},
	{"zero length", []byte{0, 0, 0}, 1, false},
	{"too many records", bytes.Repeat(AppendRecord(nil, 0, []byte("x")), MaxQueue+1), 1, false},
}

func TestDecodeRecordsHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range recordCases {
		_, err := DecodeRecords(tc.in, tc.n)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func FuzzDecodeRecords(f *testing.F) {
	for _, tc := range recordCases {
		f.Add(tc.in, tc.n)
	}
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > MaxNames {
			return
		}
		got, err := DecodeRecords(b, n)
		if err != nil {
			return
		}
		total := 0
		for _, bs := range got {
			for _, x := range bs {
				if len(x) == 0 || len(x) > MaxBlob {
					t.Fatalf("record of %d bytes", len(x))
				}
				total++
			}
		}
		if total > n*MaxQueue {
			t.Fatalf("%d records for %d names", total, n)
		}
	})
}

// nameCases seed FuzzDecodeNames: request bodies a hostile client could send a relay.
var nameCases = []struct {
	name string
	in   string
	ok   bool
}{
	{"one", strings.Repeat("a", 32), true},
	{"two", strings.Repeat("a", 32) + "\n" + strings.Repeat("b", 32), true},
	{"empty", "", false},
	{"upper case", strings.Repeat("A", 32), false},
	{"short", "abc", false},
	{"path", "../" + strings.Repeat("a", 29), false},
	{"trailing newline", strings.Repeat("a", 32) + "\n", false},
	{"too many", strings.Repeat(strings.Repeat("a", 32)+"\n", MaxNames) + strings.Repeat("a", 32), false},
}

func TestDecodeNamesHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range nameCases {
		_, err := DecodeNames([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func FuzzDecodeNames(f *testing.F) {
	for _, tc := range nameCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		names, err := DecodeNames(b)
		if err != nil {
			return
		}
		if len(names) > MaxNames {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if CheckName(n) != nil {
				t.Fatalf("bad name %q accepted", n)
			}
		}
	})
}

// unwatchedCases seed FuzzParseUnwatched: HeaderUnwatched values a
// hostile relay could send (it can at worst make a call be skipped).
var unwatchedCases = []struct {
	name string
	in   string
	n    int
	want []Unwatched // nil: none (an older relay) or refused
	ok   bool
}{
	{"none (an older relay)", "", 2, nil, true},
	{"one", "42000", 1, []Unwatched{{For: 42 * time.Second}}, true},
	{"two", "0,1500", 2, []Unwatched{{}, {For: 1500 * time.Millisecond}}, true},
	{"dropped", "1200d,0", 2, []Unwatched{{For: 1200 * time.Millisecond, Dropped: true}, {}}, true},
	{"a day", "86400000d", 1, []Unwatched{{For: 24 * time.Hour, Dropped: true}}, true},
	{"over a day", "86400001", 1, nil, false},
	{"too few", "1", 2, nil, false},
	{"too many", "1,2,3", 2, nil, false},
	{"negative", "-1", 1, nil, false},
	{"plus", "+1", 1, nil, false},
	{"space", " 1", 1, nil, false},
	{"hex", "0x10", 1, nil, false},
	{"fraction", "1.5", 1, nil, false},
	{"empty value", "1,", 2, nil, false},
	{"d alone", "d", 1, nil, false},
	{"d twice", "1dd", 1, nil, false},
	{"d first", "d1", 1, nil, false},
	{"another letter", "1x", 1, nil, false},
	{"huge", "999999999999999999999", 1, nil, false},
	{"long", strings.Repeat("0", 100), 1, nil, false},
	{"many commas", strings.Repeat(",", 1000), 1001, nil, false},
	{"unicode digits", "١٢", 1, nil, false},
}

func TestParseUnwatchedHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range unwatchedCases {
		got, err := ParseUnwatched(tc.in, tc.n)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
	}
	us := []Unwatched{{}, {For: 3 * time.Second, Dropped: true}, {For: -time.Second}}
	if got, err := ParseUnwatched(FormatUnwatched(us), 3); err != nil || !slices.Equal(got, []Unwatched{{}, {For: 3 * time.Second, Dropped: true}, {}}) {
		t.Errorf("FormatUnwatched read back: %v %v", got, err)
	}
}

func FuzzParseUnwatched(f *testing.F) {
	for _, tc := range unwatchedCases {
		f.Add(tc.in, tc.n)
	}
	f.Fuzz(func(t *testing.T, v string, n int) {
		if n < 0 || n > MaxNames {
			return
		}
		got, err := ParseUnwatched(v, n)
		if err != nil || got == nil {
			return
		}
		if len(got) != n {
			t.Fatalf("%d values for %d names", len(got), n)
		}
		for _, u := range got {
			if u.For < 0 || u.For > maxUnwatched {
				t.Fatalf("value %v", u.For)
			}
		}
		if back, err := ParseUnwatched(FormatUnwatched(got), n); err != nil || !slices.Equal(back, got) {
			t.Fatalf("%q read back as %v %v, was %v", FormatUnwatched(got), back, err, got)
		}
	})
}
