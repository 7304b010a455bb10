package weblink

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/internal/safetext"
)

// A share page finds files two ways beside paging: a search (?q=: the
// files whose path has the text in it, any letter case, listed in pages as
// every file is) and the folders (?folders=1: each folder that holds
// files, in pages, with a link to the page of its first file). Both work
// without JavaScript.

// maxSearchBytes bounds a search's text.
const maxSearchBytes = 256

// maxPages is more pages than any share has (MaxShareFiles/pageRows), for
// reading the page a search asks for before its results are counted.
const maxPages = 1 << 29

// folderRun is a folder that holds files: the row of its first file and
// how many it holds (its own, not those of the folders inside it).
type folderRun struct {
	first, count uint32
}

// dirOf is the folder part of a row's name, "" for a file shared by itself.
func dirOf(name string) string {
	if j := strings.LastIndexByte(name, '/'); j >= 0 {
		return name[:j]
	}
	return ""
}

// within reports whether folder d is inside folder top.
func within(d, top string) bool {
	return len(d) > len(top) && d[len(top)] == '/' && d[:len(top)] == top
}

// indexFolders fills sh.folders and sh.rowFolder from the table. A folder's
// files may come in several runs: a walk lists a folder's entries by name,
// so "A/b.txt" comes after "A/a/x.txt". Its later runs come after files of
// folders inside it only, so a stack of the folders the rows are in finds
// them without a map (the table may hold 10^6 rows): 8 bytes a folder and 4
// a row.
func (sh *share) indexFolders() {
	type open struct {
		dir string
		k   uint32
	}
	var stack []open
	loose := -1 // the folder of the files shared by themselves ("")
	sh.rowFolder = make([]uint32, len(sh.files))
	prev, prevK := "", uint32(0)
	for i, f := range sh.files {
		d := dirOf(f.name)
		var k uint32
		switch {
		case i > 0 && d == prev:
			k = prevK
		case d == "":
			if loose < 0 {
				sh.folders = append(sh.folders, folderRun{first: uint32(i)})
				loose = len(sh.folders) - 1
			}
			k = uint32(loose)
		default:
			for len(stack) > 0 && stack[len(stack)-1].dir != d && !within(d, stack[len(stack)-1].dir) {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && stack[len(stack)-1].dir == d {
				k = stack[len(stack)-1].k
			} else {
				sh.folders = append(sh.folders, folderRun{first: uint32(i)})
				k = uint32(len(sh.folders) - 1)
				stack = append(stack, open{d, k})
			}
		}
		sh.folders[k].count++
		sh.rowFolder[i] = k
		prev, prevK = d, k
	}
}

// folderHref is the href of the page of every file where row first is, at
// its heading.
func folderHref(first int) string {
	return pageHref(first/pageRows+1) + "#r" + strconv.Itoa(first)
}

// folderRow is one row of the folder list.
type folderRow struct {
	Name, Href, Count string
}

// folderRows are the folder list's rows from to to (indexes of sh.folders).
func (sh *share) folderRows(from, to int) []folderRow {
	rows := make([]folderRow, 0, to-from)
	for _, fr := range sh.folders[from:to] {
		name := notInAFolder
		if d := dirOf(sh.files[fr.first].name); d != "" {
			name = safetext.Name(d)
		}
		count := "1 file"
		if fr.count != 1 {
			count = fmt.Sprintf("%d files", fr.count)
		}
		rows = append(rows, folderRow{Name: name, Href: folderHref(int(fr.first)), Count: count})
	}
	return rows
}

// askedFolders reports whether a share page's query asks for the folder
// list: "folders=1", named once.
func askedFolders(rawQuery string) bool {
	q, _ := url.ParseQuery(rawQuery)
	v := q["folders"]
	return len(v) == 1 && v[0] == "1"
}

// parseSearch reads the search a share page's query asks for ("q", named
// at most once; spaces at its ends dropped): "" for none. A search that
// cannot be one (named twice, longer than maxSearchBytes, not UTF-8, a
// control character) is refused with the sentence the page shows instead.
func parseSearch(rawQuery string) (search, bad string) {
	q, _ := url.ParseQuery(rawQuery) // what parsed of it; a page number is parsePage's
	v, ok := q["q"]
	switch {
	case !ok:
		return "", ""
	case len(v) != 1:
		return "", "That search could not be read. These are all the files."
	}
	s := strings.TrimSpace(v[0])
	switch {
	case len(s) > maxSearchBytes:
		return "", fmt.Sprintf("A search is at most %d bytes long. These are all the files.", maxSearchBytes)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return "", "That search could not be read. These are all the files."
	}
	return s, ""
}

// searchSlot waits for the link's search slot: one search at a time reads
// the table, so a page asked for again and again costs one reading of it
// at once, not one per request. release gives it back; ok is false when
// the request or the link ended first.
func (sh *share) searchSlot(r *http.Request) (release func(), ok bool) {
	select {
	case sh.search <- struct{}{}:
		return func() { <-sh.search }, true
	case <-r.Context().Done():
	case <-sh.l.ctx.Done():
	}
	return nil, false
}

// find reads every row's name for search (any letter case) and returns the
// rows found that page p of the results lists (in the table's order) and
// how many were found in all. Its memory is a page of rows and one name.
func (sh *share) find(search string, p int) (rows []int, found int) {
	needle := appendLower(nil, search)
	from, to := (p-1)*pageRows, p*pageRows
	var buf []byte
	for i, f := range sh.files {
		buf = appendLower(buf[:0], f.name)
		if !bytes.Contains(buf, needle) {
			continue
		}
		if found >= from && found < to {
			rows = append(rows, i)
		}
		found++
	}
	return rows, found
}

// appendLower appends s in lower case to b (unicode.ToLower of each rune;
// ASCII without its tables).
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, unicode.ToLower(r))
		i += n
	}
	return b
}
