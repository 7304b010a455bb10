package quic

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// cmsg builds one control message in the kernel's layout.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func groMsg(size int32) []byte {
	d := make([]byte, 4)
	binary.NativeEndian.PutUint32(d, uint32(size))
	return cmsg(unix.SOL_UDP, unix.UDP_GRO, d)
}

var tosMsg = cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x02})

// Hostile and odd coalesced buffers: whatever the kernel or the peer's
// datagrams put there, splitting never loses or invents a byte, and the
// GRO size never reaches quic-go.
func TestSplitGRO(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100) // 1000 bytes
	cases := []struct {
		name  string
		oob   []byte
		sizes []int
		oobTo []byte // control messages each datagram carries
	}{
		{"no control messages", nil, []int{1000}, nil},
		{"one datagram, no GRO size", tosMsg, []int{1000}, tosMsg},
		{"even split", groMsg(250), []int{250, 250, 250, 250}, []byte{}},
		{"short last datagram", groMsg(300), []int{300, 300, 300, 100}, []byte{}},
		{"size equal to the buffer", groMsg(1000), []int{1000}, []byte{}},
		{"size over the buffer", groMsg(5000), []int{1000}, []byte{}},
		{"size 0", groMsg(0), []int{1000}, []byte{}},
		{"negative size", groMsg(-7), []int{1000}, []byte{}},
		{"size 1", groMsg(1), nil, []byte{}},
		{"other messages kept, in order", append(append(append([]byte{}, tosMsg...), groMsg(500)...), tosMsg...), []int{500, 500},
			append(append([]byte{}, tosMsg...), tosMsg...)},
		{"GRO body too short", cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{1, 2}), []int{1000}, cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{1, 2})},
		{"truncated header", groMsg(250)[:10], []int{1000}, groMsg(250)[:10]},
		{"length past the end", func() []byte { b := groMsg(250); b[0] = 200; return b }(), []int{1000},
			func() []byte { b := groMsg(250); b[0] = 200; return b }()},
	}
	addr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			segs := splitGRO(nil, data, tc.oob, make([]byte, groOOB), addr)
			var joined []byte
			for i, s := range segs {
				joined = append(joined, s.data...)
				if s.addr != addr {
					t.Errorf("datagram %d: address %v", i, s.addr)
				}
				if !bytes.Equal(s.oob, tc.oobTo) {
					t.Errorf("datagram %d: control messages %x, want %x", i, s.oob, tc.oobTo)
				}
			}
			if !bytes.Equal(joined, data) {
				t.Fatalf("datagrams do not add up to the buffer")
			}
			if tc.sizes == nil { // size 1: one datagram per byte
				if len(segs) != len(data) {
					t.Errorf("%d datagrams", len(segs))
				}
				return
			}
			if len(segs) != len(tc.sizes) {
				t.Fatalf("%d datagrams, want %d", len(segs), len(tc.sizes))
			}
			for i, s := range segs {
				if len(s.data) != tc.sizes[i] {
					t.Errorf("datagram %d: %d bytes, want %d", i, len(s.data), tc.sizes[i])
				}
			}
		})
	}
}

func FuzzSplitGRO(f *testing.F) {
	f.Add([]byte("hello world"), groMsg(3))
	f.Add(make([]byte, 3000), append(append([]byte{}, tosMsg...), groMsg(1452)...))
	f.Add([]byte{1}, groMsg(250)[:10])
	f.Add([]byte{}, groMsg(0))
	f.Fuzz(func(t *testing.T, data, oob []byte) {
		if len(oob) > groOOB {
			oob = oob[:groOOB] // the kernel never writes more than the buffer
		}
		segs := splitGRO(nil, data, oob, make([]byte, groOOB), nil)
		var joined []byte
		for i, s := range segs {
			joined = append(joined, s.data...)
			if len(s.oob) > len(oob) {
				t.Fatalf("datagram %d: control messages grew", i)
			}
			if i > 0 && i < len(segs)-1 && len(s.data) != len(segs[0].data) {
				t.Fatalf("datagram %d: %d bytes, the first has %d", i, len(s.data), len(segs[0].data))
			}
		}
		if !bytes.Equal(joined, data) {
			t.Fatal("datagrams do not add up to the buffer")
		}
		if len(data) > 0 && len(segs) == 0 {
			t.Fatal("no datagram")
		}
	})
}

// quicMessages are messages as quic-go's oobConn prepares them: buffers of
// 1452 bytes and 128 bytes of control messages.
func quicMessages(n int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 1452)}
		ms[i].OOB = make([]byte, 128)
	}
	return ms
}

// sendGSO sends payload as datagrams of seg bytes in one sendmsg.
func sendGSO(t *testing.T, from *net.UDPConn, to *net.UDPAddr, payload []byte, seg uint16) {
	t.Helper()
	d := make([]byte, 2)
	binary.NativeEndian.PutUint16(d, seg)
	if _, _, err := from.WriteMsgUDP(payload, cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, d), to); err != nil {
		t.Fatal(err)
	}
}

// A GSO batch arrives as one coalesced buffer and reaches quic-go as the
// datagrams that were sent, in order, 8 per ReadBatch like recvmmsg, from
// one receive call; a datagram too big for quic-go's buffer is cut and
// flagged as the kernel would.
func TestReadBatchSplitsCoalescedDatagrams(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		t.Run(ip, func(t *testing.T) { readBatchSplits(t, net.ParseIP(ip)) })
	}
}

func readBatchSplits(t *testing.T, ip net.IP) {
	rc, err := listenUDP(net.JoinHostPort(ip.String(), "0"))
	if err != nil && ip.To4() == nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if !rc.groOn() {
		t.Fatal("the kernel refused UDP_GRO (Linux has it since 5.0)")
	}
	sc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	to := rc.LocalAddr().(*net.UDPAddr)

	const seg, count = 1200, 11
	payload := make([]byte, seg*count-700) // the last datagram is 500 bytes
	for i := range payload {
		payload[i] = byte(i / seg) // each datagram's bytes name it
	}
	sendGSO(t, sc, to, payload, seg)

	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got [][]byte
	for len(got) < count {
		ms := quicMessages(8)
		n, err := rc.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n > 8 {
			t.Fatalf("%d messages filled", n)
		}
		for _, m := range ms[:n] {
			got = append(got, append([]byte(nil), m.Buffers[0][:m.N]...))
			if m.Addr.String() != sc.LocalAddr().String() {
				t.Errorf("address %v, want %v", m.Addr, sc.LocalAddr())
			}
			if _, rest := groSize(m.OOB[:m.NN], make([]byte, groOOB)); !bytes.Equal(rest, m.OOB[:m.NN]) {
				t.Errorf("the GRO size reached quic-go: %x", m.OOB[:m.NN])
			}
		}
	}
	for i, d := range got {
		want := min(seg, len(payload)-i*seg)
		if len(d) != want || d[0] != byte(i) || d[len(d)-1] != byte(i) {
			t.Errorf("datagram %d: %d bytes starting %d, want %d bytes of %d", i, len(d), d[0], want, i)
		}
	}
	if calls, dgrams := rc.receiveCounts(); calls != 1 || dgrams != count {
		t.Errorf("%d receive calls for %d datagrams, want 1 for %d", calls, dgrams, count)
	}

	// A lone 1500-byte datagram does not fit quic-go's 1452 bytes.
	if _, err := sc.WriteToUDP(make([]byte, 1500), to); err != nil {
		t.Fatal(err)
	}
	ms := quicMessages(8)
	n, err := rc.ReadBatch(ms, 0)
	if err != nil || n != 1 || ms[0].N != 1452 || ms[0].Flags&unix.MSG_TRUNC == 0 {
		t.Errorf("oversized datagram: n %d err %v N %d flags %x", n, err, ms[0].N, ms[0].Flags)
	}
}
