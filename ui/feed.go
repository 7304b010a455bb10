package ui

// This file is the part of Run that works off the Fyne goroutine: it folds
// and bounds the engine's events so that each update of the widgets does a
// bounded amount of work whatever the number of files (issue 30). A
// transfer of 10^5 files sends 10^5 file events; an offer of them lists its
// first files and every top-level folder.

const (
	// maxBatchFiles is how many of the files a FileBatch names; the rest
	// are only counted. A row keeps as many (Details lists them).
	maxBatchFiles = 100
	// maxBatchFailures is how many failed files past those a FileBatch, and
	// a row, name besides.
	maxBatchFailures = 100
	// maxOfferFiles bounds the files an offer lists to the widgets (the
	// engine lists the first 1000 and every refused one, at most 1000).
	maxOfferFiles = 2000
	// maxOfferFolders bounds the top-level folders an offer lists to the
	// widgets; the others are summed up (Offer.FoldersLeft).
	maxOfferFolders = 100
)

// foldFile adds one TransferFile event to the batch b stands for (nil:
// none yet) and returns the batch event.
func foldFile(b *TransferEvent, ev TransferEvent) *TransferEvent {
	if b == nil {
		b = &TransferEvent{Kind: TransferFiles, ID: ev.ID, Delivery: ev.Delivery, Direction: ev.Direction,
			Peer: ev.Peer, Files: &FileBatch{}}
	}
	if ev.State != "" {
		b.State = ev.State
	}
	b.Time = ev.Time
	if f := ev.File; f != nil {
		b.Files.add(*f)
	}
	return b
}

// add counts f in and names it if there is room.
func (b *FileBatch) add(f FileResult) {
	b.Ended++
	switch {
	case f.Verified:
		b.Verified++
		if b.Image == nil && isImage(f.Path) {
			b.Image = &f
		}
	case f.Err != "":
		b.Failed++
	}
	switch {
	case len(b.First) < maxBatchFiles:
		b.First = append(b.First, f)
	case f.Err != "" && !f.Verified && len(b.Failures) < maxBatchFailures:
		b.Failures = append(b.Failures, f)
	}
}

// boundOffer returns o with at most maxOfferFiles files and
// maxOfferFolders folders listed (the others summed up), copied when it
// is cut; o itself is never changed.
func boundOffer(o *Offer) *Offer {
	if o == nil || len(o.Files) <= maxOfferFiles && len(o.Folders) <= maxOfferFolders {
		return o
	}
	c := *o
	c.Count = o.FileCount()
	if len(o.Files) > maxOfferFiles {
		c.Files = o.Files[:maxOfferFiles:maxOfferFiles]
	}
	if len(o.Folders) > maxOfferFolders {
		c.Folders = o.Folders[:maxOfferFolders:maxOfferFolders]
		for _, f := range o.Folders[maxOfferFolders:] {
			c.FoldersLeft.Folders++
			c.FoldersLeft.Files += f.Files
			c.FoldersLeft.Bytes += f.Bytes
		}
	}
	return &c
}
