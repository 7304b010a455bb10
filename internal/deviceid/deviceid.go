// Package deviceid writes the short form of a device ID the one way every
// screen and line of Ferry shows it ("PT27-TYCL": the app, ferry-cli, the
// engine's warnings and errors), and reads a typed ID in any of its forms.
// It is a leaf: the ui may use it, which imports nothing of the engine.
package deviceid

import "strings"

// Short is the short form of a device ID: its first eight characters in two
// groups of four, "PT27-TYCL", as the full ID is shown in groups of four.
// An ID of fewer than eight characters (not a Ferry device's) is returned
// as it is.
func Short(id string) string {
	if len(id) < 8 {
		return id
	}
	return id[:4] + "-" + id[4:8]
}

// Compact is a typed device ID, or a prefix or short form of one, in the
// stored form: upper case, without the dashes and spaces that group it
// ("pt27-tycl" and "PT27 TYCL" are "PT27TYCL").
func Compact(s string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
}
