package engine

import "sync"

// fileReports remembers which of a transfer's files were reported
// (EventFile), and how. A later session of the same transfer reports again
// what an earlier one settled: the receiver's resume finds the files it
// saved and resolves them once more, the sender hears of each again, and
// both say the refused files again as the session begins. The transfer's
// subscribers were told already: the app's row, which counts the events,
// said "Received 20,539 files" of 20,000 after a send killed and run again.
// A file is reported once per outcome: one that failed and then arrived
// is reported both times. Two bits a file, grown as files are reported.
type fileReports struct {
	mu         sync.Mutex // guards the fields below
	ok, failed []uint64
}

// first marks file idx reported with the outcome ok and says whether it
// had not been reported so before.
func (r *fileReports) first(idx int, ok bool) bool {
	if idx < 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bits := &r.failed
	if ok {
		bits = &r.ok
	}
	w, b := idx/64, uint64(1)<<(idx%64)
	if w >= len(*bits) {
		*bits = append(*bits, make([]uint64, w+1-len(*bits))...)
	}
	if (*bits)[w]&b != 0 {
		return false
	}
	(*bits)[w] |= b
	return true
}

// fileReports is t's record of the files it reported, made on first use.
func (t *Transfer) fileReports() *fileReports {
	if r := t.reports.Load(); r != nil {
		return r
	}
	t.reports.CompareAndSwap(nil, &fileReports{})
	return t.reports.Load()
}

// publishFile publishes fr, file idx's outcome in t, unless t reported
// that file with that outcome already (fileReports).
func (e *Engine) publishFile(t *Transfer, idx int, fr *FileResult) {
	if t.fileReports().first(idx, fr.Verified) {
		e.publish(t, Event{Kind: EventFile, File: fr})
	}
}
