package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// writeZip packs files into out under the folder prefix, in the order
// given, every entry stamped with mtime: the same files give the same bytes.
func writeZip(out, prefix string, files []string, mtime time.Time) error {
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	zw := zip.NewWriter(f)
	for _, name := range files {
		if err := addToZip(zw, prefix+"/"+filepath.Base(name), name, mtime); err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("zip: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	return nil
}

func addToZip(zw *zip.Writer, entry, name string, mtime time.Time) error {
	src, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	defer src.Close()
	h := &zip.FileHeader{Name: entry, Method: zip.Deflate, Modified: mtime}
	h.SetMode(0o644)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return fmt.Errorf("zip: %s: %w", entry, err)
	}
	if _, err := io.Copy(w, src); err != nil {
		return fmt.Errorf("zip: %s: %w", entry, err)
	}
	return nil
}
