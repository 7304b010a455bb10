package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
)

// The sends under way, kept across a restart of the app: a send that
// Ferry was closed, killed or crashed in the middle of comes back at the
// next start as a row that goes on as the same delivery (its receiver is
// not asked again, and only what it lacks travels: engine.Continue).
const (
	sendsFile = "sends.json"
	// maxSends bounds the sends kept; the oldest go first. The engine
	// keeps as many deliveries of its own (resume's maxDeliveries).
	maxSends = 64
	// maxSendPaths bounds the items of one kept send: a larger one is not
	// kept (it does not come back after a restart; dropped again, the same
	// files still go on as the same delivery: engine.SendItems).
	maxSendPaths = 1000
)

// unfinishedSend is what the app keeps of a send under way to go on with
// it after a restart: the delivery and what it sends to which device.
type unfinishedSend struct {
	Delivery string      `json:"delivery"`
	PeerID   string      `json:"peer_id"`
	PeerName string      `json:"peer_name,omitempty"`
	Addrs    []addr.Addr `json:"addrs,omitempty"` // where the device was when the send began
	Paths    []string    `json:"paths,omitempty"`
	Text     string      `json:"text,omitempty"`
	Started  time.Time   `json:"started"`
}

// check says what makes s unusable: a file edited by hand, or written by
// a Ferry with other rules.
func (s unfinishedSend) check() error {
	switch {
	case s.Delivery == "" || len(s.Delivery) > 64:
		return fmt.Errorf("delivery %q: not a delivery ID", s.Delivery)
	case s.PeerID == "":
		return errors.New("no device ID")
	case len(s.Paths) == 0 && s.Text == "":
		return errors.New("nothing to send")
	case len(s.Paths) > maxSendPaths:
		return fmt.Errorf("%d paths, over %d", len(s.Paths), maxSendPaths)
	case engine.CheckText(s.Text) != nil:
		return engine.CheckText(s.Text)
	}
	for _, p := range s.Paths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("path %q is not absolute", p)
		}
	}
	return nil
}

// sendStore keeps the unfinished sends in <config>/sends.json, written
// atomically each time one starts or ends. A nil *sendStore keeps none.
type sendStore struct {
	path string
	mu   sync.Mutex       // guards the fields below
	all  []unfinishedSend // oldest first
	// ended are sends whose end came before they were kept (add: the
	// engine's result can beat the goroutine that keeps it), so that add
	// does not keep a send that ended; bounded by maxSends.
	ended []string
}

// openSends reads the sends kept in dir. A damaged file is set aside (and
// said with a *damagedError); an unusable entry is left out and logged.
func openSends(dir string) (*sendStore, error) {
	st := &sendStore{path: filepath.Join(dir, sendsFile)}
	var all []unfinishedSend
	if err := loadJSON(st.path, &all); err != nil {
		return st, fmt.Errorf("load unfinished sends: %w", err)
	}
	for _, s := range all {
		if err := s.check(); err != nil {
			slog.Warn("an unfinished send cannot be resumed; left out", "file", st.path, "delivery", s.Delivery, "err", err)
			continue
		}
		st.all = append(st.all, s)
	}
	if len(st.all) > maxSends {
		st.all = st.all[len(st.all)-maxSends:]
	}
	return st, nil
}

// list returns the kept sends, oldest first.
func (st *sendStore) list() []unfinishedSend {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.all)
}

// get returns the kept send of delivery id.
func (st *sendStore) get(id string) (unfinishedSend, bool) {
	if st == nil {
		return unfinishedSend{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := slices.IndexFunc(st.all, func(s unfinishedSend) bool { return s.Delivery == id })
	if i < 0 {
		return unfinishedSend{}, false
	}
	return st.all[i], true
}

// add keeps s (in place of an earlier one of its delivery), unless it
// ended already, and saves the file.
func (st *sendStore) add(s unfinishedSend) error {
	if st == nil {
		return nil
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("keep the send: %w", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if i := slices.Index(st.ended, s.Delivery); i >= 0 {
		st.ended = slices.Delete(st.ended, i, i+1)
		return nil
	}
	st.all = slices.DeleteFunc(st.all, func(o unfinishedSend) bool { return o.Delivery == s.Delivery })
	st.all = append(st.all, s)
	if len(st.all) > maxSends {
		st.all = st.all[len(st.all)-maxSends:]
	}
	return st.save()
}

// remove forgets the send of delivery id (it ended) and saves the file.
func (st *sendStore) remove(id string) error {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.all)
	st.all = slices.DeleteFunc(st.all, func(s unfinishedSend) bool { return s.Delivery == id })
	if len(st.all) == n {
		if !slices.Contains(st.ended, id) {
			st.ended = append(st.ended, id)
			if len(st.ended) > maxSends {
				st.ended = st.ended[1:]
			}
		}
		return nil
	}
	return st.save()
}

func (st *sendStore) save() error {
	if len(st.all) == 0 {
		if err := os.Remove(st.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("save unfinished sends: %w", err)
		}
		return nil
	}
	if err := saveJSON(st.path, st.all); err != nil {
		return fmt.Errorf("save unfinished sends: %w", err)
	}
	return nil
}

// sendEnds reports whether a send's result r ends what the app keeps of
// it: sent, declined, expired, cancelled (here or there). A failure keeps
// it, as its row keeps Retry: closed before it is retried, Ferry shows it
// again at its next start.
func sendEnds(r *ui.Result) bool {
	if !r.State.Final() {
		return false
	}
	if r.State != ui.StateFailed {
		return true
	}
	switch r.Code {
	case ui.CodeCancelled, ui.CodeDeclined, ui.CodeExpired, ui.CodeBusy, ui.CodeUntrusted:
		return true
	}
	return false
}
