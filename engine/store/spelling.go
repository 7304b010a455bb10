package store

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A folder that ignores letter case finds "a" when it holds "A": FAT and
// exFAT on every system, a Mac's APFS and HFS+ as formatted by default,
// Windows's NTFS, an ext4 folder with casefold (chattr +F). There an
// offer's folders "p/A" and "p/a", two folders where they were sent from,
// were merged into the first one made, and every file of the second was
// reported where it was not ("p/a/y.txt", saved in "p/A"; "p/a/x (1).txt"
// beside the other "x.txt"). A peer's folder merges only into a folder of
// exactly its name (its composed or decomposed spelling, which look the
// same, counting as it): one that differs in letter case is a name taken,
// and the folder arrives as "a (1)", its files reported saved there. Which
// folders ignore case is not known by their file system's type (APFS can
// be formatted either way, casefold is set per folder): the folder is
// asked, for each name that merges, whether the name in the other case
// finds something too, and only then listed for the name's own spelling.
// It is asked on every system alike, and writes nothing.

// otherCase is name with its letters in the other case, upper case where
// that changes it, else lower case; "" when no letter of name has a case
// ("2024", "写真"), whose spelling a file system's case cannot change.
func otherCase(name string) string {
	if u := strings.ToUpper(name); u != name {
		return u
	}
	if l := strings.ToLower(name); l != name {
		return l
	}
	return ""
}

// spelled reports whether what name finds in fo (a folder isDir said is
// one, or a file holdsSame looks at) is named name, letter case and all, or a spelling of it that
// looks the same (composed or decomposed): where name in the other case
// finds nothing, fo tells cases apart and it is; else fo is listed. The
// listing is kept for the next name, and read again when it lacks one (a
// folder made since): a tree sent again merges each of its folders, and
// listing a folder's parent for each would cost the square of a folder's
// count of folders.
func (fo *folder) spelled(name string) (bool, error) {
	other := otherCase(name)
	if other == "" {
		return true, nil
	}
	if _, err := fo.isDir(other); err != nil {
		return true, nil // none, or not a name here: the cases are told apart
	}
	want := composed(name)
	fo.listingMu.Lock()
	defer fo.listingMu.Unlock()
	if _, ok := fo.listing[want]; ok {
		return true, nil
	}
	root, err := fo.rootOf()
	if err != nil {
		return false, err
	}
	names, err := listing(root, ".")
	if err != nil {
		return false, err
	}
	fo.listing = nil
	if len(names) <= maxListed {
		fo.listing = names
	}
	_, ok := names[want]
	return ok, nil
}

// maxListed bounds the names a folder's kept listing holds (spelled).
const maxListed = 1 << 16

// spelledAt is spelled for the folder dir (OS form, relative to root) and
// name in it, through root alone and keeping nothing (resolveElem).
func spelledAt(root *os.Root, dir, name string) (bool, error) {
	other := otherCase(name)
	if other == "" {
		return true, nil
	}
	if _, err := root.Lstat(filepath.Join(dir, other)); err != nil {
		return true, nil
	}
	names, err := listing(root, dir)
	if err != nil {
		return false, err
	}
	_, ok := names[composed(name)]
	return ok, nil
}

// listing is the names the folder dir of root lists, composed (a spelling
// decomposed looks the same). A fresh descriptor reads it: the folder's
// own is shared, and reading moves its offset.
func listing(root *os.Root, dir string) (map[string]struct{}, error) {
	if dir == "" {
		dir = "."
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]struct{}{}
	for {
		batch, err := f.Readdirnames(256)
		for _, n := range batch {
			names[composed(n)] = struct{}{}
		}
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Twins finds an offer's names that are one name where letter case is
// ignored (SameNameKey): folders "p/A" and "p/a", files "p/Read.me" and
// "p/READ.ME", a file "p/x" and a folder "p/X", from its files' paths taken
// in the offer's order (Add). Where the download folder ignores case the
// first of them made keeps its name and the others arrive numbered ("p/a
// (1)", "p/READ (1).ME"): made as files land, that was whichever landed
// first, which the streams decide, so one transfer saved "p/a/y.txt" as "p/a
// (1)/y.txt" and the next, the same, "p/A/x.txt" as "p/A (1)/x.txt". Making
// the first spelling of each folder (Firsts) before any file lands, and
// keeping the first spelling of each file's name for it (FirstFiles,
// Dest.Reserve), gives the offer's first its name every time, and a resume
// finds it so. Where case is told apart the folder is one its files would
// make anyway, and a name kept changes nothing. It holds each name's path
// once, up to MaxBytes of them: a name first seen beyond that is not
// compared (it arrives as before: the first to land keeps its name), and
// one that reads as numbered is kept in a NameFilter (NumberedBeyond).
//
// A file and a folder of exactly one name ("p/x" and "p/x/y", which no
// file tree sends but a peer may) are one name on every file system: the
// offer's first of them keeps it too, and the other arrives numbered. A
// name numbered here ("p/READ (1).ME") must not take a name the offer holds
// for another file or folder ("p/Read (1).me"), in any case: Numbered lists
// those that read as numbered, which Dest.Avoid keeps from numbering. A
// file path added more than once is listed with the places of its copies
// (Copies), which Partial.SetCopy numbers in the offer's order.
type Twins struct {
	// MaxBytes bounds the bytes of paths it holds; 0 for 8 MiB
	// (maxTwinBytes: an offer of a million files would hold them all).
	MaxBytes int

	seed     maphash.Seed
	seen     map[uint64]*twin // by twinHash of the path
	order    []*twin          // as first seen
	numbered []string         // the paths seen whose name reads as numbered
	prev     string           // the folder of the path added last
	held     int              // bytes held in seen, spelt and copies
	files    int              // files added
	// spelt holds the place (Add's count) of the first file of each other
	// spelling of a name seen, by its path composed; copies the places of
	// each file path added more than once, in order.
	spelt  map[string]int
	copies map[string][]int
	// beyond holds the paths that read as numbered first seen past
	// MaxBytes, nil until one is; in half as many bytes again.
	beyond *NameFilter
}

type twin struct {
	first string // the first spelling seen
	at    int32  // first's place among the files added (a file's)
	file  bool   // first is a file's path, not a folder's
	twins bool   // another spelling was seen, or the other kind of this one
}

// maxTwinBytes is Twins.MaxBytes's default.
const maxTwinBytes = 8 << 20

// Add takes the path of the offer's next file (slash-separated, as sent).
func (t *Twins) Add(rel string) {
	if t.seen == nil {
		t.seen, t.seed = map[uint64]*twin{}, maphash.MakeSeed()
	}
	dir := ""
	if i := strings.LastIndexByte(rel, '/'); i > 0 {
		dir = rel[:i]
	}
	t.folders(dir)
	t.note(rel, true)
	t.files++
}

// AddFolder takes the path of one of the offer's empty folders, which are
// made after its files (and so added after them).
func (t *Twins) AddFolder(rel string) {
	if t.seen == nil {
		t.seen, t.seed = map[uint64]*twin{}, maphash.MakeSeed()
	}
	t.folders(rel)
}

// folders notes each folder of dir's path that the path added before did
// not name.
func (t *Twins) folders(dir string) {
	if dir != t.prev { // most files: in the folder of the one before
		// Each folder of dir's path that the previous path's did not name.
		shared := sharedFolders(dir, t.prev)
		t.prev = dir
		for i, n := 0, 0; i <= len(dir); i++ {
			if i < len(dir) && dir[i] != '/' {
				continue
			}
			if n++; n <= shared {
				continue
			}
			t.note(dir[:i], false)
		}
	}
}

// note takes the path p of a folder or a file (file).
func (t *Twins) note(p string, file bool) {
	if p == "" {
		return // refused before (ValidatePath)
	}
	h, num := t.hash(p)
	if w, ok := t.seen[h]; ok {
		// One name, or rarely another of the same hash: twinKey tells.
		if !w.twins && (composed(w.first) != composed(p) || w.file != file) && twinKey(w.first) == twinKey(p) {
			w.twins = true
		}
		if file {
			t.copy(w, p)
		}
		return
	}
	const entry = 48 // a map entry and a twin, about
	if !t.hold(len(p) + entry) {
		if num {
			if t.beyond == nil {
				t.beyond = newNameFilter(t.seed, t.bound()/2)
			}
			t.beyond.add(p)
		}
		return
	}
	w := &twin{first: p, at: int32(t.files), file: file}
	t.seen[h] = w
	t.order = append(t.order, w)
	if num {
		t.numbered = append(t.numbered, p)
	}
}

// hold takes n bytes more, if the bound leaves them.
func (t *Twins) hold(n int) bool {
	if t.held+n > t.bound() {
		return false
	}
	t.held += n
	return true
}

// bound is MaxBytes, or its default.
func (t *Twins) bound() int {
	if t.MaxBytes == 0 {
		return maxTwinBytes
	}
	return t.MaxBytes
}

// copy notes p, the path of the file added now, whose name w holds: a copy
// of w's first, of another spelling seen before, or that spelling's first.
func (t *Twins) copy(w *twin, p string) {
	key := composed(p)
	first := int(w.at)
	if !w.file || composed(w.first) != key {
		at, ok := t.spelt[key]
		if !ok {
			if t.hold(len(key) + 48) {
				if t.spelt == nil {
					t.spelt = map[string]int{}
				}
				t.spelt[key] = t.files
			}
			return
		}
		first = at
	}
	places := t.copies[key]
	if places == nil {
		if !t.hold(len(key) + 48) {
			return
		}
		if t.copies == nil {
			t.copies = map[string][]int{}
		}
		places = []int{first}
	}
	if t.hold(48) { // and the receiver's map entry for it, about
		t.copies[key] = append(places, t.files)
	}
}

// Copies is, for each file path added more than once (exactly, or
// composed and decomposed), the places of its files among those added
// (counted from 0, in Add's order), the first first; ordered by it.
func (t *Twins) Copies() [][]int {
	out := make([][]int, 0, len(t.copies))
	for _, places := range t.copies {
		out = append(out, places)
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// hash is a hash of twinKey(p): names of one key have one hash. A name of
// plain ASCII letters, digits and ".-_ ()" not ending in a dot or a space,
// which composed, visible, shortened and Windows's rules leave as it is,
// is hashed in upper case as it is read: SameNameKey allocated a string for
// every file of an offer (0.95 s for a million, where the folders alone
// took 19 ms). numbered: the name, as keyed, reads as numbered
// (readsNumbered).
func (t *Twins) hash(p string) (sum uint64, numbered bool) {
	var h maphash.Hash
	h.SetSeed(t.seed)
	dir, base := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, base = p[:i], p[i+1:]
	}
	h.WriteString(composed(dir))
	h.WriteByte('/')
	if !plainName(base) {
		key := SameNameKey(base)
		h.WriteString(key)
		return h.Sum64(), readsNumbered(key)
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		h.WriteByte(c)
	}
	return h.Sum64(), readsNumbered(base)
}

// readsNumbered reports whether name holds " (n)", n a number: every name
// numbered (n > 0) holds it, whatever its stem and extension.
func readsNumbered(name string) bool {
	for {
		i := strings.Index(name, " (")
		if i < 0 {
			return false
		}
		name = name[i+2:]
		j := 0
		for j < len(name) && '0' <= name[j] && name[j] <= '9' {
			j++
		}
		if j > 0 && j < len(name) && name[j] == ')' {
			return true
		}
	}
}

// plainName reports whether SameNameKey(name) is name in upper case.
func plainName(name string) bool {
	if name == "" || len(name) > MaxElementBytes || name[len(name)-1] == '.' || name[len(name)-1] == ' ' {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ' ' || c == '(' || c == ')':
		default:
			return false
		}
	}
	return !isWindowsDevice(name)
}

// Firsts is the first spelling of each folder added in more than one
// spelling (as a folder or a file), or added as a file too, in the order
// first seen (a folder before those in it).
func (t *Twins) Firsts() []string { return t.firsts(false) }

// FirstFiles is the first spelling of each file's path added in more than
// one spelling (as a file or a folder), or added as a folder too, in the
// order first seen.
func (t *Twins) FirstFiles() []string { return t.firsts(true) }

// Numbered is the paths added, files' and folders', whose name reads as a
// numbered one ("p/Read (1).me", "p/a (2)": readsNumbered, where case and
// Windows's rules are ignored), each name once, in the order first seen: a
// name numbered here must not take them (Dest.Avoid).
func (t *Twins) Numbered() []string { return t.numbered }

// NumberedBeyond holds the paths added past MaxBytes whose name reads as
// numbered, as Numbered lists those before (nil for none): a name
// numbered here must not take them either (Dest.AvoidAll).
func (t *Twins) NumberedBeyond() *NameFilter { return t.beyond }

func (t *Twins) firsts(files bool) []string {
	var out []string
	for _, w := range t.order {
		if w.twins && w.file == files {
			out = append(out, w.first)
		}
	}
	return out
}

// Reserve keeps the name of rel, a peer's file (slash-separated, as
// CreatePartial takes it), for that file alone where the folder it goes to
// ignores letter case: another spelling of the name in the same folder
// ("p/READ.ME" for "p/Read.me", or a folder "p/X" for a file "p/x") arrives
// numbered ("p/READ (1).ME", "p/X (1)") even when it is saved first, so
// that the offer's first spelling keeps its name (Twins.FirstFiles) whatever
// order the files land in. Where case is told apart it changes only one
// thing: a folder of exactly the name ("p/x/y"), which would take it
// there too, is numbered ("p/x (1)/y"). A name it refuses is not kept.
func (d *Dest) Reserve(rel string) error {
	return d.keepName(rel, func(k *keptName, local string) { k.spelling = composed(local) })
}

// keptName is what Reserve and Avoid keep of a name (by twinKey).
type keptName struct {
	spelling string // Reserve's: the spelling (composed) that keeps the name
	numbered bool   // Avoid's: no number takes the name
}

// keepName sets what d keeps of rel (a peer's path), named here.
func (d *Dest) keepName(rel string, set func(k *keptName, local string)) error {
	rel = d.localName(rel)
	if err := ValidateHere(rel); err != nil {
		return err
	}
	key := twinKey(rel)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kept == nil {
		d.kept = map[string]keptName{}
	}
	k := d.kept[key]
	set(&k, rel)
	d.kept[key] = k
	return nil
}

// Avoid keeps rel, the path of a peer's file or folder (slash-separated)
// whose name reads as numbered (Twins.Numbered: "p/Read (1).me"), from
// being given to another file or folder of the offer as its number: with
// "p/Read.me" and "p/READ.ME" where case is ignored, or a name sent twice,
// the other arrives as "p/READ (2).ME", and "p/Read (1).me" keeps its name
// whichever lands first (it lost it to the number, "p/Read (1) (1).me",
// when the number came first). Letter case is ignored in this on every
// file system. A name it refuses is not kept.
func (d *Dest) Avoid(rel string) error {
	return d.keepName(rel, func(k *keptName, _ string) { k.numbered = true })
}

// AvoidAll keeps the paths f holds (Twins.NumberedBeyond) from being
// given to another file or folder of the offer as its number, as Avoid
// keeps one: a number f holds wrongly is passed over too.
func (d *Dest) AvoidAll(f *NameFilter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.avoidAll = f
}

// avoids reports whether name, a number for the file or folder rel (a
// peer's path) in rel's folder, is a name Avoid or AvoidAll keeps for
// another.
func (d *Dest) avoids(rel, name string) bool {
	d.mu.Lock()
	all := d.avoidAll
	d.mu.Unlock()
	if all == nil && !d.anyKept() {
		return false
	}
	rel = d.localName(rel)
	dir, path := "", name
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir = composed(rel[:i])
		path = dir + "/" + name
	}
	if all.holds(path) {
		return true
	}
	key := dir + "/" + SameNameKey(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kept[key].numbered
}

// twinKey is the key under which Reserve keeps rel (a local name): its
// folders as spelled, its name as SameNameKey compares it. Twins in two
// folders of two spellings ("P/x", "p/X") are in two folders already.
func twinKey(rel string) string {
	dir, base := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, base = composed(rel[:i]), rel[i+1:]
	}
	return dir + "/" + SameNameKey(base)
}

// yields reports whether rel (a local name, as split gives it) is another
// spelling of a name Reserve keeps for another file: it is numbered where
// its folder ignores case (foldsCase).
func (d *Dest) yields(rel string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.kept) == 0 {
		return false
	}
	r := d.kept[twinKey(rel)].spelling
	return r != "" && r != composed(rel)
}

// folderYields reports whether rel (a local name), a folder, is to be
// numbered in parent (of which folds asks whether it ignores case) for a
// file's name Reserve keeps: the name exactly, on every file system, or
// another spelling of it where case is ignored.
func (d *Dest) folderYields(rel string, folds func() bool) bool {
	if !d.anyKept() {
		return false
	}
	d.mu.Lock()
	r := d.kept[twinKey(rel)].spelling
	d.mu.Unlock()
	return r != "" && (r == composed(rel) || folds())
}

// yieldsIn is yields for rel, a peer's file going to the folder to, which
// holds the name known (or "": foldsCase finds one).
func (d *Dest) yieldsIn(rel string, to *folder, known string) bool {
	return d.anyKept() && d.yields(d.localName(rel)) && d.foldsCase(to, known, true)
}

// anyKept reports whether Reserve or Avoid kept a name.
func (d *Dest) anyKept() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.kept) > 0
}

// foldsCase reports whether the folder fo ignores letter case: whether a
// name in it, known (the caller's partial) or else the first it lists that
// has a letter, is found in the other case too where its listing does not
// hold that spelling (spelled asks so too; fusefat gives the two lookups
// two inode numbers, so they cannot be compared). A folder without such a
// name is asked with one made for it, an empty file removed at once
// (".ferry-case-….tmp"), when write is set. Only a name that yields to
// another's (Reserve) asks it.
func (d *Dest) foldsCase(fo *folder, known string, write bool) bool {
	root, err := fo.rootOf()
	if err != nil {
		return false
	}
	return foldsCaseIn(root, ".", known, write)
}

// foldsCaseIn is foldsCase for the folder dir (OS form) of root.
func foldsCaseIn(root *os.Root, dir, known string, write bool) bool {
	names, err := listing(root, dir)
	if err != nil {
		return false
	}
	if known == "" {
		for n := range names {
			if otherCase(n) != "" {
				known = n
				break
			}
		}
	}
	if known == "" {
		if !write {
			return false
		}
		known = fmt.Sprintf(".ferry-case-%x.tmp", rand.Uint64())
		f, err := root.OpenFile(filepath.Join(dir, known), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return false
		}
		f.Close()
		defer root.Remove(filepath.Join(dir, known))
	}
	other := otherCase(known)
	if _, err := root.Lstat(filepath.Join(dir, other)); err != nil {
		return false
	}
	_, listed := names[composed(other)]
	return !listed
}
