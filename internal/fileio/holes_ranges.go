package fileio

import "errors"

// allocatedRange is FILE_ALLOCATED_RANGE_BUFFER: the range asked of
// Windows's FSCTL_QUERY_ALLOCATED_RANGES, and each range of its answer.
type allocatedRange struct {
	offset, length int64
}

// queryRanges asks for the allocated ranges of a file inside [off,
// off+length), in order, into out: n of them, and more when out had no
// room for the rest (ERROR_MORE_DATA).
type queryRanges func(off, length int64, out []allocatedRange) (n int, more bool, err error)

// rangesAfter finds a file of size's runs of data through query, a page
// of ranges at a time, asking again from where a page that said more
// ended. It is Windows's dataAfter (holes_windows.go), kept here so that
// its paging is tested on every platform.
func rangesAfter(query queryRanges, size int64) dataAfter {
	var page [64]allocatedRange
	var got []allocatedRange // the page's ranges not yet passed
	asked, more := false, false
	return func(off int64) (int64, int64, bool, error) {
		for {
			for len(got) > 0 && got[0].offset+got[0].length <= off {
				got = got[1:]
			}
			if len(got) > 0 {
				r := got[0]
				return max(r.offset, off), r.offset + r.length, true, nil
			}
			if (asked && !more) || off >= size {
				return 0, 0, false, nil
			}
			n, m, err := query(off, size-off, page[:])
			if err != nil {
				return 0, 0, false, err
			}
			if n < 0 || n > len(page) || (m && n == 0) {
				return 0, 0, false, errors.New("FSCTL_QUERY_ALLOCATED_RANGES answered no range and more")
			}
			for i, r := range page[:n] {
				if r.length <= 0 || r.offset < 0 || (i > 0 && r.offset < page[i-1].offset+page[i-1].length) {
					return 0, 0, false, errors.New("allocated ranges out of order or of no length")
				}
			}
			if n > 0 && page[n-1].offset+page[n-1].length <= off {
				return 0, 0, false, errors.New("allocated ranges before the range asked")
			}
			got, asked, more = page[:n], true, m
		}
	}
}
