package discovery

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/deviceid"
)

// TXT record keys Ferry advertises. Everything in a TXT record is an
// untrusted hint: the TLS handshake decides who a peer is.
const (
	txtVersion = "v"  // protocol version, decimal
	txtID      = "id" // device ID, base32 upper case
	txtOS      = "os" // runtime.GOOS of the peer
	txtName    = "n"  // full device name (the instance label may be truncated)
)

// txtPorts are the TXT keys of the ports a device listens on, each for the
// kind of address it names, in the order they are written (0 or absent:
// not listening on that kind). Every Ferry so far reads "q" and "t" and
// needs one of them; the SRV record points at the first one listening.
var txtPorts = []txtPort{
	{"q", addr.QUIC}, // QUIC UDP port
	{"t", addr.TCP},  // TCP+TLS port
}

// txtPort is a TXT key that holds the port of one kind.
type txtPort struct {
	key  string
	kind addr.Kind
}

// txtPortKind is the kind a TXT port key names, "" for another key.
func txtPortKind(key string) addr.Kind {
	for _, p := range txtPorts {
		if p.key == key {
			return p.kind
		}
	}
	return ""
}

// Limits applied to what peers send us, so hostile records cannot grow memory.
const (
	// ProtocolVersion is the TXT "v" value this package advertises.
	ProtocolVersion = 1
	// IDLen is the length of a device ID: base32 (no padding) of a SHA-256.
	IDLen = deviceid.Len
	// MaxNameLen bounds a device name in bytes.
	MaxNameLen    = 63
	maxTXTStrings = 16
	maxTXTString  = 255
	maxTXTTotal   = 1024
	maxOSLen      = 16
)

// ErrBadTXT reports a TXT record that is not a usable Ferry advertisement.
var ErrBadTXT = errors.New("invalid ferry TXT record")

// txtInfo is what a Ferry TXT record tells us.
type txtInfo struct {
	Version int
	ID      string
	Ports   []Port // in txtPorts order, listening ones only
	OS      string
	Name    string
}

// parseTXT validates a peer's TXT strings. It never panics and allocates at
// most O(maxTXTTotal) whatever it is fed; unknown keys are ignored so later
// versions can add fields.
func parseTXT(txt []string) (txtInfo, error) {
	var info txtInfo
	if len(txt) > maxTXTStrings {
		return info, fmt.Errorf("%w: %d strings", ErrBadTXT, len(txt))
	}
	total := 0
	seen := map[string]bool{}
	for _, s := range txt {
		total += len(s)
		if len(s) > maxTXTString || total > maxTXTTotal {
			return info, fmt.Errorf("%w: too long", ErrBadTXT)
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue // boolean attribute; none are ours
		}
		k = strings.ToLower(k)
		if seen[k] {
			continue // RFC 6763 6.4: only the first occurrence counts
		}
		kind := txtPortKind(k)
		switch k {
		case txtVersion, txtID, txtOS, txtName:
			seen[k] = true
		default:
			if kind == "" {
				continue
			}
			seen[k] = true
		}
		var err error
		switch k {
		case txtVersion:
			info.Version, err = parseSmallInt(v, 1, 1<<16)
		case txtID:
			info.ID, err = normalizeID(v)
		case txtOS:
			if len(v) > maxOSLen || !isToken(v) {
				err = errors.New("bad os")
			}
			info.OS = v
		case txtName:
			info.Name, err = cleanName(v)
		default: // a port
			var n int
			if n, err = parseSmallInt(v, 0, 65535); n > 0 {
				info.Ports = append(info.Ports, Port{Kind: kind, Port: n})
			}
		}
		if err != nil {
			return txtInfo{}, fmt.Errorf("%w: %s: %v", ErrBadTXT, k, err)
		}
	}
	switch {
	case info.Version == 0:
		return txtInfo{}, fmt.Errorf("%w: no version", ErrBadTXT)
	case info.ID == "":
		return txtInfo{}, fmt.Errorf("%w: no device ID", ErrBadTXT)
	case len(info.Ports) == 0:
		return txtInfo{}, fmt.Errorf("%w: no port", ErrBadTXT)
	}
	slices.SortStableFunc(info.Ports, func(a, b Port) int { return portOrder(a.Kind) - portOrder(b.Kind) })
	return info, nil
}

// portOrder is kind's place in txtPorts.
func portOrder(kind addr.Kind) int {
	return slices.IndexFunc(txtPorts, func(p txtPort) bool { return p.kind == kind })
}

// buildTXT is the inverse of parseTXT for our own advertisement.
func buildTXT(s Service) []string {
	txt := []string{
		txtVersion + "=" + strconv.Itoa(ProtocolVersion),
		txtID + "=" + s.ID,
	}
	for _, p := range txtPorts {
		txt = append(txt, p.key+"="+strconv.Itoa(s.port(p.kind)))
	}
	txt = append(txt, txtOS+"="+s.OS)
	if s.Name != "" {
		txt = append(txt, txtName+"="+s.Name)
	}
	// miekg/dns reads backslash escapes when packing TXT strings.
	for i := range txt {
		txt[i] = strings.ReplaceAll(txt[i], `\`, `\\`)
	}
	return txt
}

func parseSmallInt(s string, lo, hi int) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, errors.New("bad number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi || strings.HasPrefix(s, "+") {
		return 0, errors.New("bad number")
	}
	return n, nil
}

// normalizeID reads a device ID in full or human (dashed) form, any case,
// as every part of Ferry reads it (deviceid.Parse): one device, one ID.
func normalizeID(s string) (string, error) {
	if len(s) > 2*IDLen {
		return "", errors.New("bad device ID")
	}
	return deviceid.Parse(s)
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// cleanName validates a device name: valid UTF-8, at most MaxNameLen bytes,
// no control or format characters (no bidi overrides to spoof a name).
func cleanName(s string) (string, error) { return cleanNameUpTo(s, MaxNameLen) }

// maxProbedNameLen bounds a name a probe's answer gives: the device's own
// name, as Ferry's hello carries it (engine/wire's MaxNameLen), not an mDNS
// label. A name longer than 63 bytes was dropped, and the device listed as
// its address, then as "Device 25HQ-ZJ63".
const maxProbedNameLen = 255

// cleanNameUpTo is cleanName with max bytes at most.
func cleanNameUpTo(s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return "", errors.New("bad name")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return "", errors.New("bad name")
		}
	}
	return s, nil
}

// instanceLabel turns a device name into a DNS-SD instance label: no dots or
// backslashes (zeroconf does not escape them), at most 63 bytes, valid UTF-8.
func instanceLabel(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '.' || r == '\\':
			return '-'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, name)
	for len(name) > MaxNameLen {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if strings.TrimSpace(name) == "" {
		name = "Ferry"
	}
	return name
}
