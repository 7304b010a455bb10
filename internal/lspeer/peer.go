// Package lspeer is a LocalSend peer for tests, written from the public
// protocol text (github.com/localsend/protocol, README v2.1, and the
// official app's 2.2 behaviour: a register answers an announcement, a
// client certificate may be required) without importing Ferry's own
// implementation (engine/localsend), so that the two sides of an interop
// test are read from the text separately. It is deliberately plain: maps
// of JSON, net/http, its own ECDSA certificate.
package lspeer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Peer is one LocalSend device: a certificate, a server and a client.
type Peer struct {
	Alias       string
	Cert        tls.Certificate
	Fingerprint string
	Port        int
	// DeviceModel and DeviceType are what it says of itself (empty:
	// "lspeer", "headless").
	DeviceModel, DeviceType string

	// Server behaviour.
	PIN               string
	RequireClientCert bool
	Decline           bool
	// Dial dials for the client and the register answers (nil: net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu        sync.Mutex
	Received  map[string][]byte // file name -> bytes, completed uploads
	Texts     []string
	Offers    []map[string]any // prepare-upload bodies received
	Registers []Registration
	Cancels   int
	Failed    map[string]int // file name -> status answered
	wrongPINs map[string]int
	sessions  map[string]*psession
	srv       *http.Server
	// UploadStarted, when set, hears every upload's start (before its body).
	UploadStarted func(name string)
	// SaveDir, when set, streams uploads into files there instead of
	// keeping them in Received (benchmarks); Received then holds nil.
	SaveDir string
	// FailUpload, when set and true for a name, answers that upload 500.
	FailUpload func(name string) bool
	// Skip, when set and true for a name, leaves that file out of the
	// prepare-upload answer, as a LocalSend user who unticks it does.
	Skip func(name string) bool
	// Uploads counts the upload requests per file name.
	Uploads map[string]int
	// InfoDelay holds the info answer this long (a slow device).
	InfoDelay time.Duration
	// NoInfo answers info 404, as a receiver that serves the upload API
	// alone.
	NoInfo bool
}

// Registration is one register request the peer's server received.
type Registration struct {
	Body            map[string]any
	Addr            string
	CertFingerprint string
}

type psession struct {
	addr  string
	files map[string]map[string]any // id -> file entry
	token map[string]string
	done  map[string]bool
}

// New makes a peer with a fresh certificate.
func New(alias string) (*Peer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "LocalSend User"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return &Peer{Alias: alias, Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		Fingerprint: strings.ToUpper(hex.EncodeToString(sum[:])), Port: 53317,
		Received: map[string][]byte{}, Failed: map[string]int{}, Uploads: map[string]int{}, wrongPINs: map[string]int{}, sessions: map[string]*psession{}}, nil
}

// Info is the device object the peer announces and registers with.
func (p *Peer) Info(announce *bool) map[string]any {
	model, kind := p.DeviceModel, p.DeviceType
	if model == "" {
		model = "lspeer"
	}
	if kind == "" {
		kind = "headless"
	}
	m := map[string]any{"alias": p.Alias, "version": "2.1", "deviceModel": model, "deviceType": kind,
		"fingerprint": p.Fingerprint, "port": p.Port, "protocol": "https", "download": false}
	if announce != nil {
		m["announce"] = *announce
	}
	return m
}

func fingerprintOf(der []byte) string {
	sum := sha256.Sum256(der)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func token() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// Serve runs the peer's HTTPS server on ln until Close.
func (p *Peer) Serve(ln net.Listener) error {
	mux := http.NewServeMux()
	base := "/api/localsend/v2/"
	mux.HandleFunc(base+"register", p.register)
	mux.HandleFunc(base+"info", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		no, delay := p.NoInfo, p.InfoDelay
		p.mu.Unlock()
		if no {
			http.NotFound(w, r)
			return
		}
		time.Sleep(delay)
		_ = json.NewEncoder(w).Encode(p.Info(nil))
	})
	mux.HandleFunc(base+"prepare-upload", p.prepare)
	mux.HandleFunc(base+"upload", p.upload)
	mux.HandleFunc(base+"cancel", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.Cancels++
		delete(p.sessions, r.URL.Query().Get("sessionId"))
		p.mu.Unlock()
	})
	auth := tls.RequestClientCert
	if p.RequireClientCert {
		auth = tls.RequireAnyClientCert
	}
	p.mu.Lock()
	p.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{p.Cert}, ClientAuth: auth}}
	srv := p.srv
	p.mu.Unlock()
	err := srv.ServeTLS(ln, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server.
func (p *Peer) Close() {
	p.mu.Lock()
	srv := p.srv
	p.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func clientFP(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	return fingerprintOf(r.TLS.PeerCertificates[0].Raw)
}

func host(r *http.Request) string {
	h, _, _ := net.SplitHostPort(r.RemoteAddr)
	return h
}

func (p *Peer) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil {
		reply(w, 400, "bad body")
		return
	}
	p.mu.Lock()
	p.Registers = append(p.Registers, Registration{Body: body, Addr: host(r), CertFingerprint: clientFP(r)})
	p.mu.Unlock()
	_ = json.NewEncoder(w).Encode(p.Info(nil))
}

func (p *Peer) prepare(w http.ResponseWriter, r *http.Request) {
	h := host(r)
	if p.PIN != "" {
		p.mu.Lock()
		wrong := p.wrongPINs[h]
		p.mu.Unlock()
		pin := r.URL.Query().Get("pin")
		switch {
		case wrong >= 3:
			reply(w, 429, "Too many requests")
			return
		case pin == "":
			reply(w, 401, "PIN required")
			return
		case pin != p.PIN:
			p.mu.Lock()
			p.wrongPINs[h]++
			p.mu.Unlock()
			reply(w, 401, "Invalid PIN")
			return
		}
	}
	var body struct {
		Info  map[string]any            `json:"info"`
		Files map[string]map[string]any `json:"files"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Files) == 0 {
		reply(w, 400, "Request body malformed")
		return
	}
	var all map[string]any
	_ = json.Unmarshal(raw, &all)
	p.mu.Lock()
	p.Offers = append(p.Offers, all)
	p.mu.Unlock()
	if p.Decline {
		reply(w, 403, "Rejected")
		return
	}
	if len(body.Files) == 1 {
		for _, f := range body.Files {
			if t, _ := f["fileType"].(string); strings.HasPrefix(t, "text/") {
				if pv, _ := f["preview"].(string); pv != "" {
					p.mu.Lock()
					p.Texts = append(p.Texts, pv)
					p.mu.Unlock()
					w.WriteHeader(204)
					return
				}
			}
		}
	}
	s := &psession{addr: h, files: body.Files, token: map[string]string{}, done: map[string]bool{}}
	out := map[string]any{}
	toks := map[string]string{}
	for id, f := range body.Files {
		if name, _ := f["fileName"].(string); p.Skip != nil && p.Skip(name) {
			continue
		}
		s.token[id] = token()
		toks[id] = s.token[id]
	}
	sid := token()
	out["sessionId"], out["files"] = sid, toks
	p.mu.Lock()
	p.sessions[sid] = s
	p.mu.Unlock()
	_ = json.NewEncoder(w).Encode(out)
}

func (p *Peer) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	s := p.sessions[q.Get("sessionId")]
	var f map[string]any
	ok := s != nil && s.addr == host(r) && s.token[q.Get("fileId")] == q.Get("token") && !s.done[q.Get("fileId")]
	if ok {
		f = s.files[q.Get("fileId")]
		s.done[q.Get("fileId")] = true
	}
	started := p.UploadStarted
	p.mu.Unlock()
	if !ok {
		reply(w, 403, "Invalid token or IP address")
		return
	}
	name, _ := f["fileName"].(string)
	p.mu.Lock()
	p.Uploads[name]++
	failIt := p.FailUpload
	p.mu.Unlock()
	if started != nil {
		started(name)
	}
	if failIt != nil && failIt(name) {
		io.Copy(io.Discard, r.Body)
		reply(w, 500, "failed on purpose")
		return
	}
	size, _ := f["size"].(float64)
	if p.SaveDir != "" {
		status := 200
		if err := saveUpload(filepath.Join(p.SaveDir, filepath.FromSlash(name)), r.Body, int64(size)); err != nil {
			status = 400
		}
		p.mu.Lock()
		if status == 200 {
			p.Received[name] = nil
		} else {
			p.Failed[name] = status
		}
		p.mu.Unlock()
		if status != 200 {
			reply(w, status, "upload failed")
		}
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<30))
	status := 200
	if err != nil || int64(len(b)) != int64(size) {
		status = 400
	} else if want, _ := f["sha256"].(string); want != "" {
		sum := sha256.Sum256(b)
		if !strings.EqualFold(want, hex.EncodeToString(sum[:])) {
			status = 422
		}
	}
	p.mu.Lock()
	if status == 200 {
		p.Received[name] = b
	} else {
		p.Failed[name] = status
	}
	p.mu.Unlock()
	if status != 200 {
		reply(w, status, "upload failed")
	}
}

// Snapshot returns copies of what the peer saw, under its lock.
func (p *Peer) Snapshot() (received map[string][]byte, texts []string, offers []map[string]any, regs []Registration, cancels int, failed map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	received = map[string][]byte{}
	for k, v := range p.Received {
		received[k] = v
	}
	failed = map[string]int{}
	for k, v := range p.Failed {
		failed[k] = v
	}
	return received, append([]string(nil), p.Texts...), append([]map[string]any(nil), p.Offers...), append([]Registration(nil), p.Registers...), p.Cancels, failed
}

// saveUpload streams an upload of size bytes into a new file at path.
func saveUpload(path string, body io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("lspeer: %d of %d bytes", n, size)
	}
	return err
}

// SendFile is one file of a send.
type SendFile struct {
	Name string
	// ID is the file's ID in the offer ("": "id" and its place, id0 first).
	ID   string
	Data []byte
	// Path, when set, is read instead of Data (streamed; never hashed).
	Path string
	// Body, when set, is sent instead of Data, claiming Size bytes (a
	// sender that stalls, or sends less than it said).
	Body io.Reader
	Size int64
	// SHA256 overrides the checksum sent ("" sends the right one when
	// WithSHA is set).
	SHA256  string
	WithSHA bool
	// Modified, when set, goes as the file's metadata (RFC 3339), as
	// LocalSend apps send a file's modification time.
	Modified string
}

// SendResult is what a send got back.
type SendResult struct {
	PrepareStatus int
	Message       string
	SessionID     string
	UploadStatus  map[string]int // file name -> status
}

// client returns an HTTP client pinned to fingerprint (any, when "").
func (p *Peer) client(fingerprint string, withCert bool) *http.Client {
	conf := &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 || (fingerprint != "" && !strings.EqualFold(fingerprintOf(raw[0]), fingerprint)) {
			return errors.New("lspeer: the server's certificate is not the announced one")
		}
		return nil
	}}
	if withCert {
		conf.Certificates = []tls.Certificate{p.Cert}
	}
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf, DialContext: dial}}
}

// Send offers files (or one text when text != "") to the server at addr
// and uploads what it accepts, one after another in the order of files. pin is sent when set.
// beforeUpload, when set, runs between prepare-upload and the uploads.
func (p *Peer) Send(ctx context.Context, addr, fingerprint string, withCert bool, pin, text string, files []SendFile, beforeUpload func(sessionID string)) (*SendResult, error) {
	hc := p.client(fingerprint, withCert)
	defer hc.CloseIdleConnections()
	entries := map[string]any{}
	byID := map[string]SendFile{}
	ids := make([]string, 0, len(files)+1) // uploaded in the order given, as a test sets it
	for i, f := range files {
		id := cmp.Or(f.ID, fmt.Sprintf("id%d", i))
		ids = append(ids, id)
		size := int64(len(f.Data))
		if f.Path != "" {
			st, err := os.Stat(f.Path)
			if err != nil {
				return nil, err
			}
			size = st.Size()
		}
		if f.Body != nil {
			size = f.Size
		}
		e := map[string]any{"id": id, "fileName": f.Name, "size": size, "fileType": "application/octet-stream"}
		if f.SHA256 != "" {
			e["sha256"] = f.SHA256
		} else if f.WithSHA {
			sum := sha256.Sum256(f.Data)
			e["sha256"] = hex.EncodeToString(sum[:])
		}
		if f.Modified != "" {
			e["metadata"] = map[string]any{"modified": f.Modified}
		}
		entries[id] = e
		byID[id] = f
	}
	if text != "" {
		entries["text"] = map[string]any{"id": "text", "fileName": "message.txt", "size": len(text), "fileType": "text/plain", "preview": text}
		byID["text"] = SendFile{Name: "message.txt", Data: []byte(text)}
	}
	body, _ := json.Marshal(map[string]any{"info": p.Info(nil), "files": entries})
	u := "https://" + addr + "/api/localsend/v2/prepare-upload"
	if pin != "" {
		u += "?pin=" + pin
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", u, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	res := &SendResult{PrepareStatus: resp.StatusCode, UploadStatus: map[string]int{}}
	if resp.StatusCode != 200 {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		res.Message, _ = m["message"].(string)
		return res, nil
	}
	var ans struct {
		SessionID string            `json:"sessionId"`
		Files     map[string]string `json:"files"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return res, fmt.Errorf("lspeer: prepare-upload answer: %w", err)
	}
	res.SessionID = ans.SessionID
	if beforeUpload != nil {
		beforeUpload(ans.SessionID)
	}
	ids = append(ids, "text")
	for _, id := range ids {
		tok, ok := ans.Files[id]
		if !ok {
			continue
		}
		f := byID[id]
		u := fmt.Sprintf("https://%s/api/localsend/v2/upload?sessionId=%s&fileId=%s&token=%s", addr, ans.SessionID, id, tok)
		var body io.Reader = bytes.NewReader(f.Data)
		size := int64(len(f.Data))
		if f.Path != "" {
			fh, err := os.Open(f.Path)
			if err != nil {
				return res, err
			}
			st, _ := fh.Stat()
			body, size = fh, st.Size()
			defer fh.Close()
		}
		if f.Body != nil {
			body, size = f.Body, f.Size
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", u, body)
		req.ContentLength = size
		resp, err := hc.Do(req)
		if err != nil {
			res.UploadStatus[f.Name] = -1
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res.UploadStatus[f.Name] = resp.StatusCode
	}
	return res, nil
}

// Cancel posts cancel for a session to the server at addr.
func (p *Peer) Cancel(ctx context.Context, addr, fingerprint, sessionID string) (int, error) {
	hc := p.client(fingerprint, true)
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://"+addr+"/api/localsend/v2/cancel?sessionId="+sessionID, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Register posts this peer's info to the server at addr (pinned to fingerprint).
func (p *Peer) Register(ctx context.Context, addr, fingerprint string) (map[string]any, error) {
	hc := p.client(fingerprint, true)
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(p.Info(nil))
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://"+addr+"/api/localsend/v2/register", strings.NewReader(string(body)))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("lspeer: register: %d", resp.StatusCode)
	}
	var m map[string]any
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&m)
	return m, err
}

// UploadCount is how many upload requests named the file.
func (p *Peer) UploadCount(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Uploads[name]
}

// Shared is what a device's download API lists (protocol section 5.2).
type Shared struct {
	Status    int            // prepare-download's answer
	Message   string         // its error message, when not 200
	Info      map[string]any // the sharing device
	SessionID string
	Files     map[string]map[string]any // id -> {id, fileName, size, fileType, ...}
}

// PrepareDownload asks the server at addr for its shared files (POST
// prepare-download, no body), with sessionID (a session it gave before)
// and pin when set.
func (p *Peer) PrepareDownload(ctx context.Context, addr, fingerprint, sessionID, pin string) (*Shared, error) {
	hc := p.client(fingerprint, false) // a browser, or a CLI: no client certificate
	defer hc.CloseIdleConnections()
	q := url.Values{}
	if sessionID != "" {
		q.Set("sessionId", sessionID)
	}
	if pin != "" {
		q.Set("pin", pin)
	}
	u := "https://" + addr + "/api/localsend/v2/prepare-download"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	sh := &Shared{Status: resp.StatusCode}
	if resp.StatusCode != 200 {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		sh.Message, _ = m["message"].(string)
		return sh, nil
	}
	var ans struct {
		Info      map[string]any            `json:"info"`
		SessionID string                    `json:"sessionId"`
		Files     map[string]map[string]any `json:"files"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return sh, fmt.Errorf("lspeer: prepare-download answer: %w", err)
	}
	sh.Info, sh.SessionID, sh.Files = ans.Info, ans.SessionID, ans.Files
	return sh, nil
}

// Download fetches one shared file (GET download?sessionId&fileId,
// protocol section 5.3); it returns the status and, on 200, the bytes.
func (p *Peer) Download(ctx context.Context, addr, fingerprint, sessionID, fileID string) (int, []byte, error) {
	hc := p.client(fingerprint, false)
	defer hc.CloseIdleConnections()
	q := url.Values{"sessionId": {sessionID}, "fileId": {fileID}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/api/localsend/v2/download?"+q.Encode(), nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, nil
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
