package engine

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/resume"
)

// A receive link's uploads on the way are partial files that only the link
// knows of: a browser cannot resume one once its link is gone, so the
// link's end removes them. When the process dies with a link open (killed,
// a crash, the power), nothing would: each receive link writes where its
// partials are to a log of its own in the resume folder
// ("link-<random>.log", locked while the link lives), and the next start
// removes what the log of a link no longer alive lists (cleanLinkUploads).
// A LocalSend session, which has no resume either, logs its partials the
// same way (lsSession.began).

// linkUploads is one receive link's log of its partial files.
type linkUploads struct {
	mu   sync.Mutex // guards the fields below
	f    *os.File   // nil when the log could not be made (then nothing is kept)
	path string
	// open are the partials begun and not gone (dest and name -> identity),
	// lines the lines in the log: once the log holds many more lines than
	// partials it is written anew (rotate), or a link left open for days
	// took two lines of its config folder for every upload it ever had.
	open  map[[2]string]string
	lines int
}

// linkLogSlack is how many lines a link's log may hold beyond twice its
// partials before it is written anew.
const linkLogSlack = 256

// linkUploadRec is one line of the log: a partial begun (+) or gone (-).
type linkUploadRec struct {
	Op   string `json:"op"`
	Dest string `json:"dest"`
	Name string `json:"name"`         // as store.Partial.Name says it
	ID   string `json:"id,omitempty"` // store.Partial.Identity: only that file is removed
}

const linkLogPrefix, linkLogSuffix = "link-", ".log"

// openLinkUploads starts a link's log (best effort: without one, a crash
// leaves the link's partials as before).
func (e *Engine) openLinkUploads() *linkUploads {
	f, path, err := newLinkLog(e.resume.Path())
	if err != nil {
		e.log.Warn("link uploads log", "err", err)
		return &linkUploads{}
	}
	return &linkUploads{f: f, path: path, open: map[[2]string]string{}}
}

// newLinkLog creates a log of a new name in dir, locked.
func newLinkLog(dir string) (*os.File, string, error) {
	b := make([]byte, 8)
	rand.Read(b)
	path := filepath.Join(dir, linkLogPrefix+hex.EncodeToString(b)+linkLogSuffix)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", err
	}
	resume.Lock(f)
	return f, path, nil
}

func (u *linkUploads) write(op, dest, name, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		return
	}
	line, _ := json.Marshal(linkUploadRec{Op: op, Dest: dest, Name: name, ID: id})
	u.f.Write(append(line, '\n')) // before the first byte lands in it
	u.lines++
	if op == "+" {
		u.open[[2]string{dest, name}] = id
	} else {
		delete(u.open, [2]string{dest, name})
	}
	if u.lines > 2*len(u.open)+linkLogSlack {
		u.rotate()
	}
}

// rotate writes the partials still open to a new log, then removes the
// old one: a crash in between leaves both, which the next start replays
// alike (a partial is removed only while it is the one logged). Called
// with mu held; on failure the old log goes on.
func (u *linkUploads) rotate() {
	f, path, err := newLinkLog(filepath.Dir(u.path))
	if err != nil {
		return
	}
	var buf []byte
	for k, id := range u.open {
		line, _ := json.Marshal(linkUploadRec{Op: "+", Dest: k[0], Name: k[1], ID: id})
		buf = append(append(buf, line...), '\n')
	}
	if _, err := f.Write(buf); err != nil || f.Sync() != nil {
		f.Close()
		os.Remove(path)
		return
	}
	u.f.Close()
	os.Remove(u.path)
	u.f, u.path, u.lines = f, path, len(u.open)
}

func (u *linkUploads) began(dest, name, id string) { u.write("+", dest, name, id) }
func (u *linkUploads) ended(dest, name string)     { u.write("-", dest, name, "") }

// close ends the log of a link that ended; remove when its partials are
// gone (else the next start removes what it lists).
func (u *linkUploads) close(remove bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		return
	}
	u.f.Close()
	if remove {
		os.Remove(u.path)
	}
	u.f = nil
}

// staleLinkLog is how old a log must be to be another process's past
// where files are not locked (Windows): a link lives an hour by default.
const staleLinkLog = 48 * time.Hour

// cleanLinkUploads removes the partial files that receive links of a
// process that died left, and their logs; it returns how many partials it
// removed. Those that cannot be removed stay listed (keepLinkUnremoved). A log locked by a live process is left alone; where files are
// not locked, one written to in the last staleLinkLog.
func (e *Engine) cleanLinkUploads() int {
	dir := e.resume.Path()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, de := range ents {
		name := de.Name()
		if !strings.HasPrefix(name, linkLogPrefix) || !strings.HasSuffix(name, linkLogSuffix) {
			continue
		}
		path := filepath.Join(dir, name)
		if resume.Locked(path) {
			continue
		}
		if !resume.Locking {
			if st, err := os.Stat(path); err != nil || e.now().Sub(st.ModTime()) < staleLinkLog {
				continue
			}
		}
		left := replayLinkLog(path)
		kept := true
		for dest, ps := range left {
			d, unremoved, err := discardPartials(dest, ps.names, ps.ids) // each only if it is still that partial
			n += d.Files
			kept = e.keepLinkUnremoved(dest, ps, unremoved, err) && kept
		}
		if kept {
			os.Remove(path)
		}
	}
	return n
}

// linkUploadsPeer is the name that the partials of receive links that
// could not be removed are listed under (a browser is no device).
const linkUploadsPeer = "a receive link"

// keepLinkUnremoved lists the partials of ps (those at the indexes
// unremoved; err says why the first could not be removed) among the
// unfinished transfers (resume.Dir.KeepUnremoved), to be discarded again
// and aged out, before the log that alone named them goes; they stayed in
// the folder, listed nowhere. It reports whether the log may go: false
// when they could not be listed (the next start tries again).
func (e *Engine) keepLinkUnremoved(dest string, ps *linkPartials, unremoved []int, err error) bool {
	if len(unremoved) == 0 {
		return true
	}
	files := make([]resume.File, len(unremoved))
	for i, k := range unremoved {
		files[i] = resume.File{Path: strings.TrimSuffix(ps.names[k], resume.PartialSuffix), Partial: ps.names[k], PartialID: ps.ids[k]}
	}
	e.log.Warn("partial files of a receive link could not be removed: they stay listed among the unfinished transfers", "files", len(files), "err", err)
	if err := e.resume.KeepUnremoved("", linkUploadsPeer, dest, files); err != nil {
		e.log.Warn("resume state", "err", err)
		return false
	}
	return true
}

// linkPartials are a folder's partials a log lists: names and identities.
type linkPartials struct{ names, ids []string }

// replayLinkLog reads a log: the partials begun and not gone, by folder.
// A line cut short by the crash is not read.
func replayLinkLog(path string) map[string]*linkPartials {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	type key struct{ dest, name string }
	open := map[key]string{} // the identity
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var r linkUploadRec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Dest == "" || r.Name == "" {
			continue
		}
		switch r.Op {
		case "+":
			open[key{r.Dest, r.Name}] = r.ID
		case "-":
			delete(open, key{r.Dest, r.Name})
		}
	}
	out := map[string]*linkPartials{}
	for k, id := range open {
		ps := out[k.dest]
		if ps == nil {
			ps = &linkPartials{}
			out[k.dest] = ps
		}
		ps.names, ps.ids = append(ps.names, k.name), append(ps.ids, id)
	}
	return out
}
