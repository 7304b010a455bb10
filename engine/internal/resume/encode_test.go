package resume

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestEncodeIsMarshal: the snapshot written one file at a time is what
// json.Marshal writes of the whole state.
func TestEncodeIsMarshal(t *testing.T) {
	f := NewFile(3, "a/b.txt", 5<<20, 5)
	f.Set(1, [32]byte{7}, 99)
	f.Partial = "a/.b.txt.partial"
	for _, files := range [][]File{nil, {}, {f}, {f, {Index: 9, Path: "c", Size: 0, Done: true, SavedAs: "c (1)"}, NewFile(4, "\"q\"\u2028", 1, 1)}} {
		s := &State{Version: Version, Peer: "p", PeerName: "Bob <b>", Manifest: "m", ChunkSize: 4 << 20, Dest: "/tmp/x",
			Updated: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC), Files: files}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := s.encode(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%d files:\n got %s\nwant %s", len(files), got.Bytes(), want)
		}
	}
}

// Files yielded by More are written after Files, as if they were listed.
func TestEncodeWritesMoreFiles(t *testing.T) {
	f := NewFile(3, "a/b.txt", 5<<20, 5)
	saved := []File{{Index: 9, Path: "c", Done: true, SavedAs: "c (1)"}, {Index: 10, Path: "d", Size: 4, Done: true, SavedAs: "d"}}
	for _, files := range [][]File{nil, {f}} {
		s := &State{Version: Version, Peer: "p", Manifest: "m", ChunkSize: 4 << 20, Dest: "/tmp/x", Files: files,
			More: func(yield func(File) bool) {
				for _, x := range saved {
					if !yield(x) {
						return
					}
				}
			}}
		whole := *s
		whole.More = nil
		whole.Files = append(append([]File(nil), files...), saved...)
		want, err := json.Marshal(&whole)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := s.encode(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%d files and 2 more:\n got %s\nwant %s", len(files), got.Bytes(), want)
		}
	}
}
