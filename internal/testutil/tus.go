package testutil

import (
	"bytes"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TusCreate asks a tus endpoint (a receive link's "tus/") for an upload of
// size bytes named name, as the link's page (tus-js-client) does, and
// returns the answer's status, its Location and its body; only a request
// that gets no answer fails t.
func TusCreate(t testing.TB, endpoint, name string, size int) (status int, location string, body []byte) {
	t.Helper()
	return TusCreateMeta(t, endpoint, name, size, nil)
}

// TusCreateMeta is TusCreate with more metadata (such as the page's
// "batch", "batchfiles", "batchbytes").
func TusCreateMeta(t testing.TB, endpoint, name string, size int, extra map[string]string) (status int, location string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(size))
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte(name))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		// A file of a folder, as the page sends it: its name, and its path.
		meta = "filename " + base64.StdEncoding.EncodeToString([]byte(name[i+1:])) +
			",relativepath " + base64.StdEncoding.EncodeToString([]byte(name))
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		meta += "," + k + " " + base64.StdEncoding.EncodeToString([]byte(extra[k]))
	}
	req.Header.Set("Upload-Metadata", meta)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ = io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), body
}

// TusUpload creates an upload of size bytes and sends body (all of it or
// its start) at offset 0, failing t unless both are accepted. It returns
// the upload's URL.
func TusUpload(t testing.TB, endpoint, name string, size int, body []byte) string {
	t.Helper()
	return TusUploadMeta(t, endpoint, name, size, body, nil)
}

// TusUploadMeta is TusUpload with more metadata (TusCreateMeta).
func TusUploadMeta(t testing.TB, endpoint, name string, size int, body []byte, extra map[string]string) string {
	t.Helper()
	status, loc, _ := TusCreateMeta(t, endpoint, name, size, extra)
	if status != http.StatusCreated {
		t.Fatalf("tus create %q: %d", name, status)
	}
	TusPatch(t, loc, 0, body)
	return loc
}

// TusPatch sends body at offset of the upload at loc, as tus resumes one,
// and fails t unless it is taken (204).
func TusPatch(t testing.TB, loc string, offset int64, body []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, loc, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", strconv.FormatInt(offset, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("tus patch %s at %d: %d", loc, offset, res.StatusCode)
	}
}
